// The backward engine against the shapes of issue 5's libtorch anchors; the
// benchmarks themselves are in torch/engine_benchmarks.hpp, shared with
// libtorch's side (torch/engine_torch.cpp).
#include "glassbox/autograd/autograd.hpp"
#include "glassbox/autograd/checkpoint.hpp"
#include "glassbox/autograd/ops.hpp"
#include "torch/engine_benchmarks.hpp"

namespace {

namespace ga = glassbox::autograd;
using glassbox::bench::engine::kFactor;

struct Glassbox {
  using Tensor = ga::Tensor;

  static Tensor leaf() {
    Tensor x = Tensor::ones(ga::Shape{1});
    x.set_requires_grad(true);
    return x;
  }
  static Tensor checkpoint_step(const Tensor& x) {
    return ga::checkpoint([](const ga::TensorList& in) { return ga::TensorList{in[0] * kFactor}; }, {x})[0];
  }
  static void backward(const Tensor& root) { ga::backward({root}); }
  static float grad_value(const Tensor& leaf) { return leaf.grad().item(); }
};

}  // namespace

int main(int argc, char** argv) { return glassbox::bench::engine::run_benchmarks<Glassbox>(argc, argv); }
