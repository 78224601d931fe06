#include "nvtx_mem_regions.hpp"

#include <nvtx3/nvToolsExtMem.h>

#include "glassbox/nvtx/domain.hpp"

namespace glassbox::cuda {

namespace {

nvtxDomainHandle_t domain() { return static_cast<nvtxDomainHandle_t>(nvtx::domain()); }

nvtxMemHeapHandle_t register_heap(void* ptr, std::size_t bytes) noexcept {
  nvtxMemVirtualRangeDesc_t range{bytes, ptr};
  nvtxMemHeapDesc_t desc{};
  desc.extCompatID = NVTX_EXT_COMPATID_MEM;
  desc.structSize = sizeof desc;
  desc.usage = NVTX_MEM_HEAP_USAGE_TYPE_SUB_ALLOCATOR;  // only its registered regions may be touched
  desc.type = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
  desc.typeSpecificDescSize = sizeof range;
  desc.typeSpecificDesc = &range;
  return nvtxMemHeapRegister(domain(), &desc);
}

void register_region(nvtxMemHeapHandle_t heap, void* ptr, std::size_t bytes) noexcept {
  nvtxMemVirtualRangeDesc_t range{bytes, ptr};
  nvtxMemRegionsRegisterBatch_t batch{};
  batch.extCompatID = NVTX_EXT_COMPATID_MEM;
  batch.structSize = sizeof batch;
  batch.regionType = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
  batch.heap = heap;
  batch.regionCount = 1;
  batch.regionDescElementSize = sizeof range;
  batch.regionDescElements = &range;
  nvtxMemRegionsRegister(domain(), &batch);
}

}  // namespace

void NvtxMemRegions::mark(void* ptr, std::size_t requested, std::size_t block_bytes) noexcept {
  std::lock_guard lock(mu_);
  auto [it, made] = heaps_.try_emplace(ptr, nullptr);
  if (made) {
    it->second = register_heap(ptr, block_bytes);
  } else {
    nvtxMemHeapReset(domain(), static_cast<nvtxMemHeapHandle_t>(it->second));  // the last caller's region
  }
  register_region(static_cast<nvtxMemHeapHandle_t>(it->second), ptr, requested);
}

void NvtxMemRegions::forget(void* ptr) noexcept {
  std::lock_guard lock(mu_);
  auto it = heaps_.find(ptr);
  if (it == heaps_.end()) return;
  nvtxMemHeapUnregister(domain(), static_cast<nvtxMemHeapHandle_t>(it->second));
  heaps_.erase(it);
}

}  // namespace glassbox::cuda
