#include "nvtx_mem_regions.hpp"

#include "glassbox/nvtx/memory.hpp"

namespace glassbox::cuda {

void NvtxMemRegions::mark(void* ptr, std::size_t requested, std::size_t block_bytes) noexcept {
  std::lock_guard lock(mu_);
  auto [it, made] = heaps_.try_emplace(ptr, nullptr);
  if (made) {
    it->second = nvtx::register_sub_allocator_heap(ptr, block_bytes);
  } else {
    nvtx::reset_heap(it->second);  // the last caller's region
  }
  nvtx::register_region(it->second, ptr, requested);
}

void NvtxMemRegions::forget(void* ptr) noexcept {
  std::lock_guard lock(mu_);
  auto it = heaps_.find(ptr);
  if (it == heaps_.end()) return;
  nvtx::unregister_heap(it->second);
  heaps_.erase(it);
}

}  // namespace glassbox::cuda
