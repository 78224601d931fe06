#include "runtime.hpp"

#include "glassbox/error.hpp"
#include "sim_runtime.hpp"
#if GLASSBOX_HAVE_CUDA
#include "cuda_runtime.hpp"
#endif

namespace glassbox::demo {

std::unique_ptr<Runtime> make_runtime(const std::string& device) {
  if (device == "cpu") return std::make_unique<SimRuntime>();
  if (device != "cuda") throw Error("device '" + device + "': expected cpu or cuda");
#if GLASSBOX_HAVE_CUDA
  return std::make_unique<CudaRuntime>();
#else
  throw Error("--device cuda: this build has no CUDA backend (configure with GLASSBOX_CUDA=ON)");
#endif
}

}  // namespace glassbox::demo
