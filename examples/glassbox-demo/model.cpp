#include "model.hpp"

#include <cmath>
#include <random>

#include "glassbox/autograd/checkpoint.hpp"
#include "glassbox/autograd/grad_mode.hpp"
#include "glassbox/autograd/ops.hpp"

namespace glassbox::demo {

namespace {

using autograd::Shape;
using autograd::Tensor;
using autograd::TensorList;

// Drawn on the host (one sequence per seed whatever the device), then made on `device`.
Tensor uniform_leaf(Shape shape, double bound, std::mt19937_64& rng, int device) {
  std::uniform_real_distribution<double> u(-bound, bound);
  std::vector<float> v(static_cast<std::size_t>(shape.numel()));
  for (float& x : v) x = static_cast<float>(u(rng));
  return Tensor::from(shape, std::move(v), device).set_requires_grad(true);
}

Tensor conv_weight(std::int64_t out, std::int64_t in, std::mt19937_64& rng, int device) {
  return uniform_leaf(Shape{out, in, 3, 3}, std::sqrt(6.0 / static_cast<double>(in * 9)), rng, device);
}

Tensor zero_bias(std::int64_t n, int device) { return Tensor::zeros(Shape{n}, device).set_requires_grad(true); }

// relu(conv2d(x, w, b)) as a checkpointed segment that closes over its
// weights, as a module's forward does: only x is kept; backward runs the
// block again and differentiates it in a nested backward, which accumulates
// into w and b.
Tensor conv_block(const Tensor& x, const Tensor& w, const Tensor& b, int stride) {
  auto block = [w, b, stride](const TensorList& in) {
    return TensorList{autograd::relu(autograd::conv2d(in[0], w, b, stride, 1))};
  };
  return autograd::checkpoint(block, {x})[0];
}

}  // namespace

SmallCnn::SmallCnn(int classes, std::uint64_t seed, int device) {
  std::mt19937_64 rng(seed);
  params_ = {conv_weight(8, 1, rng, device),
             zero_bias(8, device),
             conv_weight(16, 8, rng, device),
             zero_bias(16, device),
             conv_weight(16, 16, rng, device),
             zero_bias(16, device),
             uniform_leaf(Shape{256, classes}, std::sqrt(1.0 / 256), rng, device)};
}

Tensor SmallCnn::forward(const Tensor& images) const {
  Tensor h = conv_block(images, params_[0], params_[1], 1);
  h = conv_block(h, params_[2], params_[3], 2);
  h = conv_block(h, params_[4], params_[5], 2);
  return autograd::matmul(autograd::flatten(h), params_[6]);
}

void SmallCnn::sgd_step(float lr) {
  autograd::NoGradGuard no_grad;
  for (Tensor& p : params_) {
    Tensor g = p.grad();
    if (g.defined()) p.add_(g * -lr);
    p.zero_grad();
  }
}

}  // namespace glassbox::demo
