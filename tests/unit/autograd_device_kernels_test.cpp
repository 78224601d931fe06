// Device-memory tensors without a GPU: a recording DeviceKernels whose
// "device memory" is host memory it hands out and tracks. Every call checks
// that each pointer it gets is a live buffer of its own of the right size, so
// an op that passed host memory, a freed buffer or a short one to the device
// path fails here, and the same graphs built in host memory give the
// reference values. This executable installs the kernels for good, so it is
// one of its own.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "glassbox/autograd/autograd.hpp"
#include "glassbox/autograd/checkpoint.hpp"
#include "glassbox/autograd/device_kernels.hpp"
#include "glassbox/autograd/ops.hpp"
#include "glassbox/error.hpp"

namespace ga = glassbox::autograd;
using ga::BinaryOp;
using ga::kCpu;
using ga::ReduceOp;
using ga::Shape;
using ga::Tensor;
using ga::TensorList;
using ga::UnaryOp;

namespace {

class RecordingKernels final : public ga::DeviceKernels {
 public:
  const char* name() const noexcept override { return "recording"; }

  float* allocate(int device, std::size_t numel) override {
    std::lock_guard lock(mu_);
    calls_.insert("allocate");
    auto* p = new float[numel == 0 ? 1 : numel];
    live_[p] = {device, numel};
    return p;
  }
  void release(int device, float* p) noexcept override {
    std::lock_guard lock(mu_);
    auto it = live_.find(p);
    if (it == live_.end() || it->second.device != device) bad_.push_back("release of a pointer not allocated here");
    live_.erase(p);
    delete[] p;
  }
  void fill(int device, float* out, std::size_t n, float value) override {
    enter("fill", device, {{out, n}});
    std::fill(out, out + n, value);
  }
  void broadcast(int device, const float* s, float* out, std::size_t n, float alpha) override {
    enter("broadcast", device, {{s, 1}, {out, n}});
    std::fill(out, out + n, s[0] * alpha);
  }
  void copy_from_host(int device, const float* host, float* out, std::size_t n) override {
    enter("copy_from_host", device, {{out, n}});
    expect_host(host);
    std::copy(host, host + n, out);
  }
  void copy_to_host(int device, const float* in, float* host, std::size_t n) override {
    enter("copy_to_host", device, {{in, n}});
    expect_host(host);
    std::copy(in, in + n, host);
  }
  void copy(int src_device, const float* in, int dst_device, float* out, std::size_t n) override {
    enter("copy", src_device, {{in, n}});
    enter("copy", dst_device, {{out, n}});
    std::copy(in, in + n, out);
  }
  void unary(int device, UnaryOp op, const float* x, float* out, std::size_t n, float alpha) override {
    enter("unary", device, {{x, n}, {out, n}});
    for (std::size_t i = 0; i < n; ++i) {
      float v = x[i];
      out[i] = op == UnaryOp::scale     ? v * alpha
               : op == UnaryOp::relu    ? std::max(v, 0.0F)
               : op == UnaryOp::sigmoid ? 1.0F / (1.0F + std::exp(-v))
                                        : std::tanh(v);
    }
  }
  void binary(int device, BinaryOp op, const float* a, const float* b, float* out, std::size_t n) override {
    enter("binary", device, {{a, n}, {b, n}, {out, n}});
    for (std::size_t i = 0; i < n; ++i) {
      float x = a[i], y = b[i];
      switch (op) {
        case BinaryOp::add:
          out[i] = x + y;
          break;
        case BinaryOp::sub:
          out[i] = x - y;
          break;
        case BinaryOp::mul:
          out[i] = x * y;
          break;
        case BinaryOp::div:
          out[i] = x / y;
          break;
        case BinaryOp::relu_grad:
          out[i] = y > 0.0F ? x : 0.0F;
          break;
        case BinaryOp::sigmoid_grad:
          out[i] = x * y * (1.0F - y);
          break;
        case BinaryOp::tanh_grad:
          out[i] = x * (1.0F - y * y);
          break;
      }
    }
  }
  void reduce(int device, ReduceOp op, const float* a, const float* b, float* out, std::size_t n,
              float alpha) override {
    enter("reduce", device, {{a, n}, {out, 1}});
    if (op == ReduceOp::squared_diff) enter("reduce", device, {{b, n}});
    double s = 0.0;
    for (std::size_t i = 0; i < n; ++i) s += op == ReduceOp::sum ? a[i] : double(a[i] - b[i]) * (a[i] - b[i]);
    out[0] = static_cast<float>(alpha * s);
  }
  void log_softmax(int device, const float* x, float* out, std::size_t rows, std::size_t cols) override {
    enter("log_softmax", device, {{x, rows * cols}, {out, rows * cols}});
    for (std::size_t i = 0; i < rows; ++i) {
      const float* row = x + i * cols;
      float top = *std::max_element(row, row + cols);
      double s = 0.0;
      for (std::size_t j = 0; j < cols; ++j) s += std::exp(double(row[j] - top));
      for (std::size_t j = 0; j < cols; ++j) out[i * cols + j] = row[j] - (static_cast<float>(std::log(s)) + top);
    }
  }
  void log_softmax_backward(int device, const float* g, const float* y, float* out, std::size_t rows,
                            std::size_t cols) override {
    enter("log_softmax_backward", device, {{g, rows * cols}, {y, rows * cols}, {out, rows * cols}});
    for (std::size_t i = 0; i < rows; ++i) {
      float gsum = 0.0F;
      for (std::size_t j = 0; j < cols; ++j) gsum += g[i * cols + j];
      for (std::size_t j = 0; j < cols; ++j) out[i * cols + j] = g[i * cols + j] - std::exp(y[i * cols + j]) * gsum;
    }
  }
  void nll_loss(int device, const float* lp, const std::int64_t* targets, float* out, std::size_t rows,
                std::size_t cols) override {
    enter("nll_loss", device, {{lp, rows * cols}, {out, 1}});
    double s = 0.0;
    for (std::size_t i = 0; i < rows; ++i) s -= lp[i * cols + static_cast<std::size_t>(targets[i])];
    out[0] = static_cast<float>(s / double(rows));
  }
  void nll_loss_backward(int device, const float* g, const std::int64_t* targets, float* out, std::size_t rows,
                         std::size_t cols) override {
    enter("nll_loss_backward", device, {{g, 1}, {out, rows * cols}});
    std::fill(out, out + rows * cols, 0.0F);
    for (std::size_t i = 0; i < rows; ++i) out[i * cols + static_cast<std::size_t>(targets[i])] = -g[0] / float(rows);
  }
  void gemm(int device, const ga::GemmArgs& g) override {
    const auto m = static_cast<std::size_t>(g.m), n = static_cast<std::size_t>(g.n), k = static_cast<std::size_t>(g.k);
    enter("gemm", device, {{g.a, m * k}, {g.b, k * n}, {g.c, m * n}});
    for (std::int64_t i = 0; i < g.m; ++i) {
      for (std::int64_t j = 0; j < g.n; ++j) {
        float s = 0.0F;
        for (std::int64_t p = 0; p < g.k; ++p) {
          s += (g.transpose_a ? g.a[p * g.lda + i] : g.a[i * g.lda + p]) *
               (g.transpose_b ? g.b[j * g.ldb + p] : g.b[p * g.ldb + j]);
        }
        g.c[i * g.n + j] = s;
      }
    }
  }
  void conv2d_forward(int device, const ga::Conv2dGeometry& g, const float* x, const float* w, const float* bias,
                      float* y) override {
    enter("conv2d_forward", device, {{x, in_size(g)}, {w, w_size(g)}, {y, out_size(g)}});
    for (std::size_t i = 0; i < out_size(g); ++i) y[i] = bias != nullptr ? bias[(i / plane(g)) % k(g)] : 0.0F;
    taps(g, [&](std::size_t xi, std::size_t wi, std::size_t yi) { y[yi] += x[xi] * w[wi]; });
  }
  void conv2d_backward_input(int device, const ga::Conv2dGeometry& g, const float* dy, const float* w,
                             float* dx) override {
    enter("conv2d_backward_input", device, {{dy, out_size(g)}, {w, w_size(g)}, {dx, in_size(g)}});
    std::fill(dx, dx + in_size(g), 0.0F);
    taps(g, [&](std::size_t xi, std::size_t wi, std::size_t yi) { dx[xi] += dy[yi] * w[wi]; });
  }
  void conv2d_backward_weight(int device, const ga::Conv2dGeometry& g, const float* x, const float* dy, float* dw,
                              float* dbias) override {
    enter("conv2d_backward_weight", device, {{x, in_size(g)}, {dy, out_size(g)}, {dw, w_size(g)}});
    std::fill(dw, dw + w_size(g), 0.0F);
    taps(g, [&](std::size_t xi, std::size_t wi, std::size_t yi) { dw[wi] += dy[yi] * x[xi]; });
    if (dbias != nullptr) {
      std::fill(dbias, dbias + k(g), 0.0F);
      for (std::size_t i = 0; i < out_size(g); ++i) dbias[(i / plane(g)) % k(g)] += dy[i];
    }
  }
  void bind_thread(int device) noexcept override { enter("bind_thread", device, {}); }

  std::set<std::string> calls() {
    std::lock_guard lock(mu_);
    return calls_;
  }
  std::vector<std::string> problems() {
    std::lock_guard lock(mu_);
    return bad_;
  }
  std::size_t live_buffers() {
    std::lock_guard lock(mu_);
    return live_.size();
  }

 private:
  struct Buffer {
    int device;
    std::size_t numel;
  };
  struct Use {
    const float* p;
    std::size_t n;
  };

  static std::size_t k(const ga::Conv2dGeometry& g) { return static_cast<std::size_t>(g.k); }
  static std::size_t plane(const ga::Conv2dGeometry& g) { return static_cast<std::size_t>(g.oh * g.ow); }
  static std::size_t in_size(const ga::Conv2dGeometry& g) { return static_cast<std::size_t>(g.n * g.c * g.h * g.w); }
  static std::size_t w_size(const ga::Conv2dGeometry& g) { return static_cast<std::size_t>(g.k * g.c * g.r * g.s); }
  static std::size_t out_size(const ga::Conv2dGeometry& g) { return static_cast<std::size_t>(g.n * g.k) * plane(g); }

  // Calls f(input index, weight index, output index) for every product a
  // convolution sums, skipping taps that fall in the padding.
  template <class F>
  static void taps(const ga::Conv2dGeometry& g, F f) {
    for (std::int64_t n = 0; n < g.n; ++n)
      for (std::int64_t ko = 0; ko < g.k; ++ko)
        for (std::int64_t oy = 0; oy < g.oh; ++oy)
          for (std::int64_t ox = 0; ox < g.ow; ++ox)
            for (std::int64_t c = 0; c < g.c; ++c)
              for (std::int64_t r = 0; r < g.r; ++r)
                for (std::int64_t s = 0; s < g.s; ++s) {
                  std::int64_t iy = oy * g.stride + r - g.padding, ix = ox * g.stride + s - g.padding;
                  if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) continue;
                  f(static_cast<std::size_t>(((n * g.c + c) * g.h + iy) * g.w + ix),
                    static_cast<std::size_t>(((ko * g.c + c) * g.r + r) * g.s + s),
                    static_cast<std::size_t>(((n * g.k + ko) * g.oh + oy) * g.ow + ox));
                }
  }

  // Records the call and checks every pointer is a live buffer of `device` holding n floats.
  void enter(const char* call, int device, std::initializer_list<Use> uses) {
    std::lock_guard lock(mu_);
    calls_.insert(call);
    if (device < 0) bad_.push_back(std::string(call) + " on the CPU");
    for (const Use& u : uses) {
      auto it = live_.find(u.p);
      if (it == live_.end()) {
        bad_.push_back(std::string(call) + ": a pointer that is no live device buffer");
      } else if (it->second.device != device || it->second.numel < u.n) {
        bad_.push_back(std::string(call) + ": a buffer of another device or too short");
      }
    }
  }
  void expect_host(const float* p) {
    std::lock_guard lock(mu_);
    if (live_.count(p) != 0) bad_.push_back("a device buffer passed as host memory");
  }

  std::mutex mu_;
  std::map<const float*, Buffer> live_;
  std::set<std::string> calls_;
  std::vector<std::string> bad_;
};

RecordingKernels& kernels() {
  static auto* k = new RecordingKernels();  // never destroyed: tensors may outlive main
  return *k;
}

// First in the file: when the whole executable runs, nothing is installed yet.
TEST(DeviceKernelsInstall, IsRefusedWhileDeviceTensorsLiveInHostMemory) {
  if (ga::installed_device_kernels() != nullptr) GTEST_SKIP() << "an earlier test in this process installed them";
  {
    Tensor early = Tensor::ones(Shape{2}, 0);
    EXPECT_FALSE(early.in_device_memory());
    try {
      ga::install_device_kernels(kernels());
      FAIL() << "installed while a device tensor lives in host memory";
    } catch (const glassbox::Error& e) {
      EXPECT_NE(std::string(e.what()).find("before making any device tensor"), std::string::npos) << e.what();
    }
    EXPECT_EQ(ga::installed_device_kernels(), nullptr);
  }
  ga::install_device_kernels(kernels());
  EXPECT_TRUE(Tensor::ones(Shape{2}, 0).in_device_memory());
}

class DeviceKernelsDispatch : public ::testing::Test {
 protected:
  void SetUp() override { ga::install_device_kernels(kernels()); }
  void TearDown() override {
    for (const std::string& p : kernels().problems()) ADD_FAILURE() << p;
  }
};

Tensor leaf(Shape shape, int device, std::uint32_t seed, float lo = -1.0F, float hi = 1.0F) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<std::size_t>(shape.numel()));
  for (float& x : v) x = dist(gen);
  return Tensor::from(shape, v, device).set_requires_grad(true);
}

std::vector<float> host_values(const Tensor& t) {
  Tensor h = ga::to(t.detach(), kCpu);
  return {h.data().begin(), h.data().end()};
}

void expect_same(const Tensor& dev, const Tensor& cpu, const std::string& what) {
  ASSERT_TRUE(dev.defined() && cpu.defined()) << what;
  ASSERT_TRUE(dev.in_device_memory()) << what;
  std::vector<float> d = host_values(dev);
  ASSERT_EQ(d.size(), cpu.data().size()) << what;
  for (std::size_t i = 0; i < d.size(); ++i) EXPECT_NEAR(d[i], cpu.data()[i], 1e-5) << what << " [" << i << "]";
}

// The same graph on the CPU and on device 1, then backward from a weighted sum.
void compare(const std::string& what, const std::vector<Shape>& shapes,
             const std::function<Tensor(const TensorList&)>& f, float lo = -1.0F, float hi = 1.0F) {
  TensorList cpu_in, dev_in;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    cpu_in.push_back(leaf(shapes[i], kCpu, 50 + static_cast<std::uint32_t>(i), lo, hi));
    dev_in.push_back(leaf(shapes[i], 1, 50 + static_cast<std::uint32_t>(i), lo, hi));
  }
  Tensor cpu_out = f(cpu_in);
  Tensor dev_out = f(dev_in);
  expect_same(dev_out, cpu_out, what + " forward");
  Tensor weights = leaf(cpu_out.shape(), kCpu, 9).detach();
  ga::backward({ga::sum(cpu_out * weights)});
  ga::backward({ga::sum(dev_out * ga::to(weights, 1))});
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    expect_same(dev_in[i].grad(), cpu_in[i].grad(), what + " gradient " + std::to_string(i));
  }
}

TEST_F(DeviceKernelsDispatch, TensorsOnDevicesLiveInDeviceMemory) {
  Tensor x = Tensor::from(Shape{3}, {1.0F, 2.0F, 3.0F}, 0);
  EXPECT_TRUE(x.in_device_memory());
  EXPECT_FALSE(Tensor::zeros(Shape{3}).in_device_memory());
  try {
    (void)x.data();
    FAIL() << "data() of device memory returned";
  } catch (const glassbox::Error& e) {
    EXPECT_NE(std::string(e.what()).find("to(x, kCpu)"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)x.mutable_data(), glassbox::Error);
  EXPECT_EQ(ga::sum(x).item(), 6.0F);
  EXPECT_EQ(host_values(ga::to(ga::to(x, 1), 0)), (std::vector<float>{1.0F, 2.0F, 3.0F}));
  EXPECT_EQ(host_values(x.clone()), (std::vector<float>{1.0F, 2.0F, 3.0F}));
  EXPECT_THROW(ga::add(x, Tensor::zeros(Shape{3})), glassbox::Error) << "devices differ";
}

TEST_F(DeviceKernelsDispatch, EveryOpRunsOnTheDeviceKernelsAndMatchesTheCpu) {
  const std::vector<Shape> two{Shape{4, 5}, Shape{4, 5}};
  compare("add", two, [](const TensorList& t) { return t[0] + t[1]; });
  compare("sub", two, [](const TensorList& t) { return t[0] - t[1]; });
  compare("mul", two, [](const TensorList& t) { return t[0] * t[1]; });
  compare(
      "div", two, [](const TensorList& t) { return t[0] / t[1]; }, 0.5F, 1.5F);
  compare("scale, relu, sigmoid, tanh", {Shape{6, 3}},
          [](const TensorList& t) { return ga::tanh(ga::sigmoid(ga::relu(t[0] * 2.0F)) - t[0]); });
  compare("sum, mean", {Shape{7}}, [](const TensorList& t) { return ga::sum(t[0]) * ga::mean(t[0]); });
  compare("mse_loss", two, [](const TensorList& t) { return ga::mse_loss(t[0], t[1]); });
  compare("cross_entropy", {Shape{5, 4}}, [](const TensorList& t) { return ga::cross_entropy(t[0], {0, 3, 1, 1, 2}); });
  compare("matmul", {Shape{3, 4}, Shape{4, 2}}, [](const TensorList& t) { return ga::matmul(t[0], t[1]); });
  compare("conv2d", {Shape{2, 2, 5, 4}, Shape{3, 2, 3, 2}, Shape{3}},
          [](const TensorList& t) { return ga::conv2d(t[0], t[1], t[2], 2, 1); });
  compare("checkpoint", two, [](const TensorList& t) {
    return ga::checkpoint([](const TensorList& in) { return TensorList{ga::tanh(in[0] * in[1])}; }, t)[0];
  });
  const std::set<std::string> expected{"allocate",
                                       "fill",
                                       "broadcast",
                                       "copy_from_host",
                                       "copy_to_host",
                                       "unary",
                                       "binary",
                                       "reduce",
                                       "log_softmax",
                                       "log_softmax_backward",
                                       "nll_loss",
                                       "nll_loss_backward",
                                       "gemm",
                                       "conv2d_forward",
                                       "conv2d_backward_input",
                                       "conv2d_backward_weight",
                                       "bind_thread"};
  std::set<std::string> calls = kernels().calls();
  for (const std::string& c : expected) EXPECT_EQ(calls.count(c), 1U) << c << " never called";
}

// Gradients cross from device memory to host memory and back through ToBackward.
TEST_F(DeviceKernelsDispatch, MixedGraphsSendEachGradientToItsLeafsMemory) {
  Tensor x = leaf(Shape{2, 3}, kCpu, 1);
  Tensor w = leaf(Shape{3, 2}, 0, 2);
  Tensor loss = ga::sum(ga::to(ga::matmul(ga::to(x, 0), w), kCpu));
  ga::backward({loss});
  EXPECT_FALSE(x.grad().in_device_memory());
  EXPECT_TRUE(w.grad().in_device_memory());
  std::vector<float> wv = host_values(w);
  for (std::size_t i = 0; i < 2; ++i) {
    for (std::size_t k = 0; k < 3; ++k) EXPECT_FLOAT_EQ(x.grad().data()[i * 3 + k], wv[k * 2] + wv[k * 2 + 1]);
  }
}

TEST_F(DeviceKernelsDispatch, DeviceBuffersAreReleasedWithTheirTensors) {
  const std::size_t before = kernels().live_buffers();
  {
    Tensor a = leaf(Shape{8}, 0, 3);
    ga::backward({ga::sum(ga::relu(a) * a)});
    EXPECT_GT(kernels().live_buffers(), before);
  }
  // The device worker may drop its last references just after backward returns.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (kernels().live_buffers() != before && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(kernels().live_buffers(), before);
}

}  // namespace
