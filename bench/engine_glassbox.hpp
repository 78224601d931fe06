#pragma once
// glassbox as the library of torch/engine_benchmarks.hpp: what
// glassbox-bench-engine times, and what any program that times the same
// graph shapes against it uses.
#include "glassbox/autograd/autograd.hpp"
#include "glassbox/autograd/checkpoint.hpp"
#include "glassbox/autograd/ops.hpp"
#include "torch/engine_benchmarks.hpp"

namespace glassbox::bench::engine {

struct Glassbox {
  using Tensor = autograd::Tensor;

  static Tensor leaf() {
    Tensor x = Tensor::ones(autograd::Shape{1});
    x.set_requires_grad(true);
    return x;
  }
  static Tensor checkpoint_step(const Tensor& x) {
    return autograd::checkpoint([](const autograd::TensorList& in) { return autograd::TensorList{in[0] * kFactor}; },
                                {x})[0];
  }
  static void backward(const Tensor& root) { autograd::backward({root}); }
  static float grad_value(const Tensor& leaf) { return leaf.grad().item(); }
};

}  // namespace glassbox::bench::engine
