// libtorch's side of bench/bench_engine.cpp: the same graph shapes, backward
// timed alone, ns per chain node / fan-in branch / reentrant node.
// Build (Debian's libtorch-dev): see bench/torch_cpu/README.md.
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <functional>
#include <vector>

namespace {

constexpr double kFactor = 1.0001;

torch::Tensor scalar_leaf() { return torch::ones({1}, torch::requires_grad()); }

torch::Tensor chain(const torch::Tensor& x, int n) {
  torch::Tensor y = x;
  for (int i = 0; i < n; ++i) y = y * kFactor;
  return y;
}

torch::Tensor fan_in(const torch::Tensor& x, int n) {
  torch::Tensor acc = x * kFactor;
  for (int i = 1; i < n; ++i) acc = acc + x * kFactor;
  return acc;
}

// torch.utils.checkpoint's reentrant variant in C++: save the input, run
// without grad, recompute and backpropagate through a nested backward.
struct CheckpointStep : torch::autograd::Function<CheckpointStep> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, torch::Tensor x) {
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
    return torch::autograd::grad({y}, {x}, {grads[0]});
  }
};

torch::Tensor reentrant_chain(const torch::Tensor& x, int n) {
  torch::Tensor y = x;
  for (int i = 0; i < n; ++i) y = CheckpointStep::apply(y);
  return y;
}

double thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Wall and calling-thread CPU time per node (libtorch runs CPU graphs on the caller too).
void run(const char* name, const std::function<torch::Tensor(const torch::Tensor&, int)>& build, int n, int reps) {
  std::vector<double> wall, cpu;
  for (int r = 0; r < reps; ++r) {
    torch::Tensor x = scalar_leaf();
    torch::Tensor y = build(x, n);
    double cpu_start = thread_cpu_ns();
    auto start = std::chrono::steady_clock::now();
    y.backward();
    std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - start;
    cpu.push_back((thread_cpu_ns() - cpu_start) / n);
    wall.push_back(took.count() / n);
  }
  std::printf("%-24s ns_per_node=%.0f cpu_ns_per_node=%.0f (medians of %d)\n", name, median(wall), median(cpu), reps);
}

}  // namespace

int main() {
  torch::set_num_threads(1);
  run("BM_ChainBackward/10000", chain, 10000, 21);
  run("BM_FanInBackward/10000", fan_in, 10000, 21);
  run("BM_ReentrantChain/1000", reentrant_chain, 1000, 21);
}
