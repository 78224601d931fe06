#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>
#include "glassbox/autograd/autograd.hpp"
#include "glassbox/autograd/ops.hpp"
namespace ga = glassbox::autograd;
int main(int argc, char** argv) {
  int n = atoi(argv[1]);
  std::thread idle([] { std::this_thread::sleep_for(std::chrono::seconds(60)); });
  idle.detach();
  auto step = [&] {
    ga::Tensor x = ga::Tensor::ones(ga::Shape{1});
    x.set_requires_grad(true);
    ga::Tensor y = x;
    for (int i = 0; i < n; ++i) y = y * 1.0001F;
    ga::backward({y});
  };
  for (int i = 0; i < 20; ++i) step();
  std::vector<double> v;
  for (int r = 0; r < 7; ++r) {
    int k = 2000000 / n;
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < k; ++i) step();
    v.push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() /
                (double(k) * n));
  }
  std::sort(v.begin(), v.end());
  printf("n=%d %.1f ns/node (fwd+bwd+free)\n", n, v[3]);
  fflush(stdout);
  std::_Exit(0);
}
