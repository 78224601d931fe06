#pragma once
// NVTX's memory API (nvToolsExtMem.h) in the glassbox domain, for tools that
// check memory accesses (compute-sanitizer's memcheck): a block as a
// sub-allocator heap, of which only registered regions may be touched.
// Without the NVTX headers at build time, or without a tool attached, every
// call is a no-op and a heap is nullptr.
#include <cstddef>

namespace glassbox::nvtx {

/// Registers [ptr, ptr + bytes) as a sub-allocator heap; its handle.
void* register_sub_allocator_heap(const void* ptr, std::size_t bytes) noexcept;
/// Registers [ptr, ptr + bytes) as a region in `heap`.
void register_region(void* heap, const void* ptr, std::size_t bytes) noexcept;
/// Drops every region of `heap`; the heap stays.
void reset_heap(void* heap) noexcept;
void unregister_heap(void* heap) noexcept;

}  // namespace glassbox::nvtx
