#include "runtime.hpp"

#include "glassbox/error.hpp"
#include "sim_runtime.hpp"
#if GLASSBOX_HAVE_CUDA
#include "glassbox/backend/cuda_check.hpp"
#include "glassbox/handle_pool/current_handles.hpp"
#endif

namespace glassbox::demo {

namespace {

#if GLASSBOX_HAVE_CUDA
// The GPU runtime as far as it is wired: the real handle pools. Training on
// the GPU waits for CUDA tensors; until then stager() is null and the demo
// runs handle rounds only.
class CudaHandlesRuntime final : public Runtime {
 public:
  CudaHandlesRuntime()
      : devices_(backend::cuda_device_count()),
        sources_{{"cublas", [](int d) { handle_pool::current_cublas_handle(d, nullptr); }},
                 {"cublaslt", [](int d) { handle_pool::current_cublaslt_handle(d); }},
                 {"cudnn", [](int d) { handle_pool::current_cudnn_handle(d, nullptr); }}} {
    if (devices_ <= 0) throw Error("--device cuda: no CUDA device found; use --device cpu or auto");
  }
  std::string description() const override { return "cuda (handles only: GPU training is not wired yet)"; }
  int device_count() const override { return devices_; }
  const std::vector<HandleSource>& handle_sources() const override { return sources_; }
  BatchStager* stager() noexcept override { return nullptr; }
  std::optional<host_allocator::HostStats> host_stats() const override { return std::nullopt; }

 private:
  int devices_;
  std::vector<HandleSource> sources_;
};
#endif

}  // namespace

std::unique_ptr<Runtime> make_runtime(const std::string& device) {
  if (device == "cpu") return std::make_unique<SimRuntime>();
  if (device != "cuda") throw Error("device '" + device + "': expected cpu or cuda");
#if GLASSBOX_HAVE_CUDA
  return std::make_unique<CudaHandlesRuntime>();
#else
  throw Error("--device cuda: this build has no CUDA backend (configure with GLASSBOX_CUDA=ON)");
#endif
}

}  // namespace glassbox::demo
