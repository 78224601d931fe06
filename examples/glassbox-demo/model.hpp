#pragma once
// The demo's network: three convolution blocks, each a checkpointed segment
// (so backward recomputes it in a nested, reentrant engine call), then a
// linear layer to the class scores.
//
//   [n, 1, 16, 16] -conv 3x3 +relu-> [n, 8, 16, 16] -conv 3x3 /2 +relu-> [n, 16, 8, 8]
//   -conv 3x3 /2 +relu-> [n, 16, 4, 4] -flatten-> [n, 256] -matmul-> [n, classes]
//
// Thread-safety: forward() may run on many threads at once (DataParallel's
// replicas share the parameters); sgd_step() must not overlap it.
#include <cstdint>

#include "glassbox/autograd/tensor.hpp"

namespace glassbox::demo {

class SmallCnn {
 public:
  /// He-uniform initial weights from `seed`, zero biases, all on `device`
  /// (the same values on every device).
  SmallCnn(int classes, std::uint64_t seed, int device = autograd::kCpu);

  /// Class scores [n, classes] for images [n, 1, 16, 16] on the parameters' device.
  autograd::Tensor forward(const autograd::Tensor& images) const;
  /// p -= lr * p.grad() for every parameter, in place on its device, then
  /// clears the gradients.
  void sgd_step(float lr);
  const autograd::TensorList& parameters() const noexcept { return params_; }

 private:
  autograd::TensorList params_;  // w1, b1, w2, b2, w3, b3, fc
};

}  // namespace glassbox::demo
