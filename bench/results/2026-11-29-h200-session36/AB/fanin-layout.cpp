// Session 36: the fan-in backward (10 000 branches) timed fresh, then after
// a heap left scattered ("scramble": 20 graphs alive at once, dropped branch
// by branch in random order) or not ("none"), then after malloc_trim.
// Build: g++ -O2 -std=c++20 -I core/include -I instrumentation/include
//   -I build/core/include fanin-layout.cpp build/lib/libglassbox_core.a
//   build/lib/libglassbox_instrumentation.a -lpthread -ldl
#include <malloc.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>
#include "glassbox/autograd/autograd.hpp"
#include "glassbox/autograd/checkpoint.hpp"
#include "glassbox/autograd/engine.hpp"
#include "glassbox/autograd/ops.hpp"
namespace ga = glassbox::autograd;
using T = ga::Tensor;
constexpr float f = 1.0001F;
T leaf() {
  T x = T::ones(ga::Shape{1});
  x.set_requires_grad(true);
  return x;
}
double fan_once(int n) {
  T x = leaf();
  T acc = x * f;
  for (int i = 1; i < n; ++i) acc = acc + x * f;
  auto t0 = std::chrono::steady_clock::now();
  ga::backward({acc});
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / n;
}
double fan_median(int reps) {
  std::vector<double> v;
  for (int i = 0; i < reps; ++i) v.push_back(fan_once(10000));
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
void reentrant(int reps) {
  for (int r = 0; r < reps; ++r) {
    T x = leaf();
    T y = x;
    for (int i = 0; i < 1000; ++i)
      y = ga::checkpoint([](const ga::TensorList& in) { return ga::TensorList{in[0] * f}; }, {y})[0];
    ga::backward({y});
  }
}
void chain(int reps, int n) {
  for (int r = 0; r < reps; ++r) {
    T x = leaf();
    T y = x;
    for (int i = 0; i < n; ++i) y = y * f;
    ga::backward({y});
  }
}
int main(int argc, char** argv) {
  std::thread idle([] { std::this_thread::sleep_for(std::chrono::hours(1)); });
  idle.detach();
  const char* mode = argc > 1 ? argv[1] : "reentrant";
  std::printf("fresh %.0f\n", fan_median(30));
  if (std::string(mode) == "reentrant") reentrant(200);
  if (std::string(mode) == "chain") chain(100, 10000);
  if (std::string(mode) == "scramble") {
    // Many graphs alive at once, dropped branch by branch in random order.
    std::vector<T> keep;
    for (int g = 0; g < 20; ++g) {
      T x = leaf();
      for (int i = 0; i < 10000; ++i) keep.push_back(x * f + x * f);
    }
    std::srand(1);
    for (std::size_t i = keep.size() - 1; i > 0; --i) std::swap(keep[i], keep[std::rand() % (i + 1)]);
    keep.clear();
  }
  if (std::string(mode) == "small") {
    for (int i = 0; i < 600; ++i) fan_once(1000);
  }
  if (std::string(mode) == "threads") {
    std::vector<std::thread> ts;
    for (int t = 0; t < 8; ++t) ts.emplace_back([] { chain(300, 1000); });
    for (auto& t : ts) t.join();
  }
  std::printf("after %s %.0f\n", mode, fan_median(30));
  fan_median(150);
  std::printf("after %s, 180 backward passes on %.0f\n", mode, fan_median(30));
  malloc_trim(0);
  std::printf("after trim %.0f\n", fan_median(30));
}
