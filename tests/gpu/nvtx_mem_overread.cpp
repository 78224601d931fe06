// For compute-sanitizer: a kernel reads one byte past the requested size of
// a pinned block (into the block's rounding slack). With nvtx_mem_regions on,
// the block is an NVTX sub-allocator heap whose one region is the request,
// so memcheck should report the read; with it off, nothing marks the slack
// and the read is legal. Run:
//   compute-sanitizer --tool memcheck glassbox-gpu-nvtx-mem-overread on
//   compute-sanitizer --tool memcheck glassbox-gpu-nvtx-mem-overread off
// Exit status 0 either way (without the sanitizer the read is harmless);
// 2 on bad arguments, 1 on a CUDA failure.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstring>
#include <memory>

#include "glassbox/cuda/cuda_check.hpp"
#include "glassbox/cuda/host_allocator/cuda_host_backend.hpp"
#include "glassbox/host_allocator/caching_host_allocator.hpp"
#include "test_kernels.hpp"

namespace gha = glassbox::host_allocator;
namespace gcu = glassbox::cuda;

int main(int argc, char** argv) {
  if (argc != 2 || (std::strcmp(argv[1], "on") != 0 && std::strcmp(argv[1], "off") != 0)) {
    std::fprintf(stderr, "usage: %s on|off   (nvtx_mem_regions)\n", argv[0]);
    return 2;
  }
  const bool regions = std::strcmp(argv[1], "on") == 0;
  try {
    gcu::check_cuda(cudaFree(nullptr), "cudaFree (runtime initialization, before any NVTX call)");
    gha::HostAllocatorOptions o;
    o.config = gha::HostAllocatorConfig::parse(regions ? "nvtx_mem_regions:true" : "nvtx_mem_regions:false");
    gha::CachingHostAllocator allocator(std::make_shared<gcu::CudaHostBackend>(false, 1), o);
    constexpr std::size_t kRequested = 1000;  // rounded up to a 1024-byte block
    auto block = allocator.allocate(kRequested);
    std::memset(block.ptr, 7, kRequested + 1);  // the host touches the slack too: not the sanitizer's business
    unsigned char* dst = nullptr;
    gcu::check_cuda(cudaMalloc(reinterpret_cast<void**>(&dst), kRequested + 1), "cudaMalloc");
    // Bytes [0, kRequested] of the block: the last one is past the request.
    glassbox::testing::spin_then_copy(static_cast<const unsigned char*>(block.ptr), dst, kRequested + 1, 0, nullptr);
    gcu::check_cuda(cudaDeviceSynchronize(), "the over-reading kernel");
    gcu::check_cuda(cudaFree(dst), "cudaFree");
    allocator.free(block.ctx);
    std::printf("nvtx_mem_regions %s: a kernel read byte %zu of a %zu-byte request\n", argv[1], kRequested, kRequested);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
