#pragma once
// The host allocator's pinned blocks as NVTX memory heaps (nvToolsExtMem.h):
// each block a sub-allocator heap, and the bytes a caller asked for the one
// region in it, so that compute-sanitizer's memcheck can flag a kernel that
// reads the rounding slack past the request. Only with the config key
// nvtx_mem_regions:true (two NVTX calls per hand-out, and a lock).
#include <cstddef>
#include <mutex>
#include <unordered_map>

namespace glassbox::cuda {

class NvtxMemRegions {
 public:
  /// The block at `ptr` (of `block_bytes`) now holds `requested` bytes of a
  /// caller's; the region of its previous caller goes.
  void mark(void* ptr, std::size_t requested, std::size_t block_bytes) noexcept;
  /// The block goes back to the system: its heap goes too.
  void forget(void* ptr) noexcept;

 private:
  std::mutex mu_;
  std::unordered_map<void*, void*> heaps_;  // block -> nvtxMemHeapHandle_t
};

}  // namespace glassbox::cuda
