// NVTX's memory API behind glassbox's wrapper; no-ops without NVTX.
#include "glassbox/nvtx/memory.hpp"

#include "glassbox/nvtx/domain.hpp"

#if GLASSBOX_HAVE_NVTX
#include <nvtx3/nvToolsExtMem.h>
#endif

namespace glassbox::nvtx {

#if GLASSBOX_HAVE_NVTX

namespace {
nvtxDomainHandle_t the_domain() { return static_cast<nvtxDomainHandle_t>(domain()); }
nvtxMemHeapHandle_t heap_of(void* heap) { return static_cast<nvtxMemHeapHandle_t>(heap); }
}  // namespace

void* register_sub_allocator_heap(const void* ptr, std::size_t bytes) noexcept {
  nvtxMemVirtualRangeDesc_t range{bytes, ptr};
  nvtxMemHeapDesc_t desc{};
  desc.extCompatID = NVTX_EXT_COMPATID_MEM;
  desc.structSize = sizeof desc;
  desc.usage = NVTX_MEM_HEAP_USAGE_TYPE_SUB_ALLOCATOR;  // only its registered regions may be touched
  desc.type = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
  desc.typeSpecificDescSize = sizeof range;
  desc.typeSpecificDesc = &range;
  return nvtxMemHeapRegister(the_domain(), &desc);
}

void register_region(void* heap, const void* ptr, std::size_t bytes) noexcept {
  nvtxMemVirtualRangeDesc_t range{bytes, ptr};
  nvtxMemRegionsRegisterBatch_t batch{};
  batch.extCompatID = NVTX_EXT_COMPATID_MEM;
  batch.structSize = sizeof batch;
  batch.regionType = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
  batch.heap = heap_of(heap);
  batch.regionCount = 1;
  batch.regionDescElementSize = sizeof range;
  batch.regionDescElements = &range;
  nvtxMemRegionsRegister(the_domain(), &batch);
}

void reset_heap(void* heap) noexcept { nvtxMemHeapReset(the_domain(), heap_of(heap)); }
void unregister_heap(void* heap) noexcept { nvtxMemHeapUnregister(the_domain(), heap_of(heap)); }

#else

void* register_sub_allocator_heap(const void*, std::size_t) noexcept { return nullptr; }
void register_region(void*, const void*, std::size_t) noexcept {}
void reset_heap(void*) noexcept {}
void unregister_heap(void*) noexcept {}

#endif

}  // namespace glassbox::nvtx
