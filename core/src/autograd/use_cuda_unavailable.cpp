// use_cuda() in a build without CUDA: the one place that says so.
#include "glassbox/autograd/use_cuda.hpp"
#include "glassbox/error.hpp"

namespace glassbox::autograd {

void use_cuda() {
  throw Error(
      "use_cuda: CUDA support was not built into glassbox (configure with GLASSBOX_CUDA=ON or AUTO on a "
      "machine with the CUDA toolkit and cuDNN); device indices stay host-memory scheduling domains");
}

}  // namespace glassbox::autograd
