// libtorch's side of the backward engine comparison: the benchmarks of
// engine_benchmarks.hpp (those glassbox-bench-engine runs) over libtorch's
// autograd. One source for Debian's libtorch 1.13 and PyTorch 2.x's; how to
// build it is in README.md beside it.
#include <torch/torch.h>

#include "engine_benchmarks.hpp"

namespace {

using glassbox::bench::engine::kFactor;

// torch.utils.checkpoint's reentrant variant in C++: forward keeps the input
// and runs without grad; backward recomputes on a detached copy with grad on
// and runs a nested torch::autograd::backward through the recomputed step.
struct CheckpointStep : torch::autograd::Function<CheckpointStep> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x) {
    ctx->save_for_backward({x});
    torch::NoGradGuard no_grad;
    return x * kFactor;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    torch::Tensor x = ctx->get_saved_variables()[0].detach().requires_grad_(true);
    torch::Tensor y;
    {
      torch::AutoGradMode enable(true);
      y = x * kFactor;
    }
    torch::autograd::backward({y}, {grads[0]});
    return {x.grad()};
  }
};

struct Torch {
  using Tensor = torch::Tensor;

  static Tensor leaf() { return torch::ones({1}, torch::requires_grad()); }
  static Tensor checkpoint_step(const Tensor& x) { return CheckpointStep::apply(x); }
  static void backward(const Tensor& root) { root.backward(); }
  static float grad_value(const Tensor& leaf) { return leaf.grad().item<float>(); }
};

}  // namespace

int main(int argc, char** argv) {
  torch::set_num_threads(1);  // one-element tensors: intra-op threads would only add hand-offs
  return glassbox::bench::engine::run_benchmarks<Torch>(argc, argv);
}
