// Every op's gradient against central finite differences of a float64
// reference implementation, plus op argument checks.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "glassbox/autograd/autograd.hpp"
#include "glassbox/autograd/grad_mode.hpp"
#include "glassbox/autograd/ops.hpp"
#include "glassbox/error.hpp"
#include "gradient_check.hpp"

namespace ga = glassbox::autograd;
using ga::Shape;
using ga::Tensor;
using ga::TensorList;

namespace {

using glassbox::test::check_op;
using glassbox::test::random_leaf;
using glassbox::test::RefFn;
using glassbox::test::Values;

RefFn elementwise(std::function<double(double, double)> f) {
  return [f](const std::vector<Values>& x) {
    Values y(x[0].size());
    for (std::size_t i = 0; i < y.size(); ++i) y[i] = f(x[0][i], x.size() > 1 ? x[1][i] : 0.0);
    return y;
  };
}

class OpGradient : public ::testing::Test {
 protected:
  std::mt19937 rng{42};
  Tensor r(Shape s) { return random_leaf(s, rng); }
};

TEST_F(OpGradient, Add) {
  check_op("add", [](const TensorList& t) { return t[0] + t[1]; },
           elementwise([](double a, double b) { return a + b; }), {r({2, 3}), r({2, 3})});
}
TEST_F(OpGradient, Sub) {
  check_op("sub", [](const TensorList& t) { return t[0] - t[1]; },
           elementwise([](double a, double b) { return a - b; }), {r({2, 3}), r({2, 3})});
}
TEST_F(OpGradient, Mul) {
  check_op("mul", [](const TensorList& t) { return t[0] * t[1]; },
           elementwise([](double a, double b) { return a * b; }), {r({4}), r({4})});
}
TEST_F(OpGradient, Div) {
  check_op("div", [](const TensorList& t) { return t[0] / t[1]; },
           elementwise([](double a, double b) { return a / b; }), {r({4}), random_leaf(Shape{4}, rng, 0.5, 2.0)});
}
TEST_F(OpGradient, MulScalar) {
  check_op("mul scalar", [](const TensorList& t) { return t[0] * 1.75F; },
           elementwise([](double a, double) { return a * 1.75; }), {r({3})});
}
TEST_F(OpGradient, Relu) {
  check_op("relu", [](const TensorList& t) { return ga::relu(t[0]); },
           elementwise([](double a, double) { return a > 0 ? a : 0.0; }), {random_leaf(Shape{6}, rng, -1, 1, true)});
}
TEST_F(OpGradient, Sigmoid) {
  check_op("sigmoid", [](const TensorList& t) { return ga::sigmoid(t[0]); },
           elementwise([](double a, double) { return 1.0 / (1.0 + std::exp(-a)); }), {r({5})});
}
TEST_F(OpGradient, Tanh) {
  check_op("tanh", [](const TensorList& t) { return ga::tanh(t[0]); },
           elementwise([](double a, double) { return std::tanh(a); }), {r({5})});
}
TEST_F(OpGradient, SumAndMean) {
  auto total = [](const std::vector<Values>& x) {
    double s = 0;
    for (double v : x[0]) s += v;
    return s;
  };
  check_op(
      "sum", [](const TensorList& t) { return ga::sum(t[0]); },
      [&](const std::vector<Values>& x) { return Values{total(x)}; }, {r({2, 3})});
  check_op(
      "mean", [](const TensorList& t) { return ga::mean(t[0]); },
      [&](const std::vector<Values>& x) { return Values{total(x) / 6.0}; }, {r({2, 3})});
}
TEST_F(OpGradient, Matmul) {
  constexpr int m = 2, k = 3, n = 4;
  check_op(
      "matmul", [](const TensorList& t) { return ga::matmul(t[0], t[1]); },
      [](const std::vector<Values>& x) {
        Values y(m * n, 0.0);
        for (int i = 0; i < m; ++i)
          for (int p = 0; p < k; ++p)
            for (int j = 0; j < n; ++j) y[i * n + j] += x[0][i * k + p] * x[1][p * n + j];
        return y;
      },
      {r({m, k}), r({k, n})});
}
TEST_F(OpGradient, MseLoss) {
  check_op(
      "mse_loss", [](const TensorList& t) { return ga::mse_loss(t[0], t[1]); },
      [](const std::vector<Values>& x) {
        double s = 0;
        for (std::size_t i = 0; i < x[0].size(); ++i) s += (x[0][i] - x[1][i]) * (x[0][i] - x[1][i]);
        return Values{s / static_cast<double>(x[0].size())};
      },
      {r({2, 3}), r({2, 3})});
}

Values ref_log_softmax(const Values& x, std::size_t rows, std::size_t cols) {
  Values y(x.size());
  for (std::size_t i = 0; i < rows; ++i) {
    double s = 0;
    for (std::size_t j = 0; j < cols; ++j) s += std::exp(x[i * cols + j]);
    for (std::size_t j = 0; j < cols; ++j) y[i * cols + j] = x[i * cols + j] - std::log(s);
  }
  return y;
}

TEST_F(OpGradient, LogSoftmax) {
  check_op(
      "log_softmax", [](const TensorList& t) { return ga::log_softmax(t[0]); },
      [](const std::vector<Values>& x) { return ref_log_softmax(x[0], 3, 4); }, {r({3, 4})});
}
TEST_F(OpGradient, NllLossAndCrossEntropy) {
  const std::vector<std::int64_t> targets{2, 0, 3};
  auto nll = [targets](const Values& lp) {
    double s = 0;
    for (std::size_t i = 0; i < targets.size(); ++i) s -= lp[i * 4 + static_cast<std::size_t>(targets[i])];
    return Values{s / 3.0};
  };
  check_op(
      "nll_loss", [&](const TensorList& t) { return ga::nll_loss(t[0], targets); },
      [&](const std::vector<Values>& x) { return nll(x[0]); }, {r({3, 4})});
  check_op(
      "cross_entropy", [&](const TensorList& t) { return ga::cross_entropy(t[0], targets); },
      [&](const std::vector<Values>& x) { return nll(ref_log_softmax(x[0], 3, 4)); }, {r({3, 4})});
}
TEST_F(OpGradient, ToDeviceAndBack) {
  check_op("to", [](const TensorList& t) { return ga::to(ga::to(t[0], 1) * 2.0F, ga::kCpu); },
           elementwise([](double a, double) { return 2 * a; }), {r({3})});
}
TEST_F(OpGradient, ComposedNetwork) {
  // A two-layer network with cross entropy: every op in one graph.
  const std::vector<std::int64_t> targets{1, 0};
  check_op(
      "mlp",
      [&](const TensorList& t) {
        Tensor h = ga::sigmoid(ga::matmul(t[0], t[1]));
        return ga::cross_entropy(ga::tanh(ga::matmul(h, t[2])), targets);
      },
      [&](const std::vector<Values>& x) {
        Values h(2 * 3, 0.0), z(2 * 2, 0.0);
        for (int i = 0; i < 2; ++i)
          for (int j = 0; j < 3; ++j) {
            for (int p = 0; p < 2; ++p) h[i * 3 + j] += x[0][i * 2 + p] * x[1][p * 3 + j];
            h[i * 3 + j] = 1.0 / (1.0 + std::exp(-h[i * 3 + j]));
          }
        for (int i = 0; i < 2; ++i)
          for (int j = 0; j < 2; ++j) {
            for (int p = 0; p < 3; ++p) z[i * 2 + j] += h[i * 3 + p] * x[2][p * 2 + j];
            z[i * 2 + j] = std::tanh(z[i * 2 + j]);
          }
        Values lp = ref_log_softmax(z, 2, 2);
        return Values{-(lp[0 * 2 + 1] + lp[1 * 2 + 0]) / 2.0};
      },
      {r({2, 2}), r({2, 3}), r({3, 2})});
}

TEST(Ops, ArgumentErrorsNameTheOpAndShapes) {
  Tensor a = Tensor::zeros(Shape{2, 3});
  Tensor b = Tensor::zeros(Shape{3});
  try {
    ga::add(a, b);
    FAIL();
  } catch (const glassbox::Error& e) {
    EXPECT_NE(std::string(e.what()).find("add: inputs of shape [2, 3]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ga::mul(a, Tensor::zeros(Shape{2, 3}, 0)), glassbox::Error);
  EXPECT_THROW(ga::matmul(a, a), glassbox::Error);
  EXPECT_THROW(ga::nll_loss(a, {0, 3}), glassbox::Error);
  EXPECT_THROW(ga::log_softmax(b), glassbox::Error);
  EXPECT_THROW(Tensor::from(Shape{2}, {1, 2, 3}), glassbox::Error);
  EXPECT_THROW(Tensor::zeros(Shape{1}, ga::kMaxDevices), glassbox::Error);
}

TEST(Ops, NoGraphWithoutRequiresGradOrUnderNoGrad) {
  Tensor a = Tensor::ones(Shape{2});
  EXPECT_EQ((a * a).grad_fn(), nullptr);
  Tensor x = Tensor::ones(Shape{2}).set_requires_grad(true);
  {
    ga::NoGradGuard no_grad;
    Tensor y = x * x;
    EXPECT_EQ(y.grad_fn(), nullptr);
    EXPECT_FALSE(y.requires_grad());
  }
  EXPECT_NE((x * x).grad_fn(), nullptr);
  EXPECT_THROW(ga::backward({a * a}), glassbox::Error);  // no root requires grad
  EXPECT_THROW(ga::backward({x * x}), glassbox::Error);  // a two-element root needs its gradient
}

}  // namespace
