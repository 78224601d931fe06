// conv2d and reshape: values against a float64 reference, gradients against
// central finite differences, argument errors, and a training smoke check.
#include <gtest/gtest.h>

#include <functional>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "glassbox/autograd/autograd.hpp"
#include "glassbox/autograd/checkpoint.hpp"
#include "glassbox/autograd/conv2d_runner.hpp"
#include "glassbox/autograd/grad_mode.hpp"
#include "glassbox/autograd/ops.hpp"
#include "glassbox/error.hpp"
#include "gradient_check.hpp"

namespace ga = glassbox::autograd;
using ga::Shape;
using ga::Tensor;
using ga::TensorList;
using glassbox::test::check_op;
using glassbox::test::random_leaf;
using glassbox::test::Values;

namespace {

struct ConvCase {
  int n, c, h, w, k, r, s, stride, padding;
  int oh() const { return (h + 2 * padding - r) / stride + 1; }
  int ow() const { return (w + 2 * padding - s) / stride + 1; }
};

void PrintTo(const ConvCase& p, std::ostream* os) {
  *os << "x [" << p.n << ", " << p.c << ", " << p.h << ", " << p.w << "] w [" << p.k << ", " << p.c << ", " << p.r
      << ", " << p.s << "] stride " << p.stride << " padding " << p.padding;
}

// The definition, one output element at a time, with explicit bounds checks
// for padding: nothing shared with the kernels under test.
Values ref_conv2d(const ConvCase& p, const Values& x, const Values& w, const Values* b) {
  Values y(static_cast<std::size_t>(p.n * p.k * p.oh() * p.ow()), 0.0);
  for (int ni = 0; ni < p.n; ++ni)
    for (int ki = 0; ki < p.k; ++ki)
      for (int oy = 0; oy < p.oh(); ++oy)
        for (int ox = 0; ox < p.ow(); ++ox) {
          double acc = b ? (*b)[static_cast<std::size_t>(ki)] : 0.0;
          for (int ci = 0; ci < p.c; ++ci)
            for (int ri = 0; ri < p.r; ++ri)
              for (int si = 0; si < p.s; ++si) {
                int iy = oy * p.stride - p.padding + ri;
                int ix = ox * p.stride - p.padding + si;
                if (iy < 0 || iy >= p.h || ix < 0 || ix >= p.w) continue;
                acc += x[static_cast<std::size_t>(((ni * p.c + ci) * p.h + iy) * p.w + ix)] *
                       w[static_cast<std::size_t>(((ki * p.c + ci) * p.r + ri) * p.s + si)];
              }
          y[static_cast<std::size_t>(((ni * p.k + ki) * p.oh() + oy) * p.ow() + ox)] = acc;
        }
  return y;
}

class ConvGradient : public ::testing::TestWithParam<ConvCase> {
 protected:
  std::mt19937 rng{11};
};

TEST_P(ConvGradient, WithBias) {
  const ConvCase p = GetParam();
  check_op(
      "conv2d with bias", [p](const TensorList& t) { return ga::conv2d(t[0], t[1], t[2], p.stride, p.padding); },
      [p](const std::vector<Values>& x) { return ref_conv2d(p, x[0], x[1], &x[2]); },
      {random_leaf(Shape{p.n, p.c, p.h, p.w}, rng), random_leaf(Shape{p.k, p.c, p.r, p.s}, rng),
       random_leaf(Shape{p.k}, rng)});
}

TEST_P(ConvGradient, WithoutBias) {
  const ConvCase p = GetParam();
  check_op(
      "conv2d without bias", [p](const TensorList& t) { return ga::conv2d(t[0], t[1], Tensor(), p.stride, p.padding); },
      [p](const std::vector<Values>& x) { return ref_conv2d(p, x[0], x[1], nullptr); },
      {random_leaf(Shape{p.n, p.c, p.h, p.w}, rng), random_leaf(Shape{p.k, p.c, p.r, p.s}, rng)});
}

// Plain, padded, strided, strided with padding wider than the stride,
// non-square kernels and inputs, a 1x1 kernel, and a kernel as large as the input.
INSTANTIATE_TEST_SUITE_P(Shapes, ConvGradient,
                         ::testing::Values(ConvCase{1, 1, 4, 4, 1, 3, 3, 1, 0}, ConvCase{2, 2, 5, 4, 3, 3, 3, 1, 1},
                                           ConvCase{2, 3, 7, 6, 2, 3, 2, 2, 0}, ConvCase{1, 2, 6, 7, 2, 3, 3, 2, 2},
                                           ConvCase{2, 2, 3, 5, 3, 1, 1, 1, 0}, ConvCase{1, 2, 3, 3, 2, 3, 3, 3, 1}));

TEST(Conv2d, OnlyTheGradientsAskedForAreComputed) {
  std::mt19937 rng(5);
  Tensor x = random_leaf(Shape{1, 1, 4, 4}, rng).detach();  // data: needs no gradient
  Tensor w = random_leaf(Shape{2, 1, 3, 3}, rng);
  TensorList g = ga::grad({ga::sum(ga::conv2d(x, w, Tensor(), 1, 1))}, {w});
  ASSERT_TRUE(g[0].defined());
  EXPECT_EQ(g[0].shape(), (Shape{2, 1, 3, 3}));
}

TEST(Conv2d, EveryKernelGoesThroughTheInstalledRunner) {
  std::mt19937 rng(6);
  Tensor x = random_leaf(Shape{1, 2, 4, 4}, rng);
  Tensor w = random_leaf(Shape{3, 2, 3, 3}, rng);
  Tensor inline_out = ga::conv2d(x, w, Tensor(), 1, 1);
  TensorList inline_grads = ga::grad({ga::sum(inline_out)}, {x, w});
  int calls = 0;
  ga::Conv2dRunner previous = ga::set_conv2d_runner([&](int device, const std::function<void()>& kernel) {
    EXPECT_EQ(device, ga::kCpu);
    ++calls;
    kernel();
  });
  EXPECT_FALSE(previous);
  Tensor out = ga::conv2d(x, w, Tensor(), 1, 1);
  EXPECT_EQ(calls, 1);
  TensorList grads = ga::grad({ga::sum(out)}, {x, w});
  EXPECT_EQ(calls, 3);  // forward, gradient of the input, gradient of the weight
  EXPECT_TRUE(ga::set_conv2d_runner(nullptr));
  ga::conv2d(x, w, Tensor(), 1, 1);
  EXPECT_EQ(calls, 3);  // inline again
  for (std::size_t k = 0; k < 2; ++k) {
    for (std::int64_t i = 0; i < grads[k].numel(); ++i) {
      EXPECT_EQ(grads[k].data()[static_cast<std::size_t>(i)], inline_grads[k].data()[static_cast<std::size_t>(i)]);
    }
  }
}

TEST(Conv2d, BadArgumentsNameTheOpAndShapes) {
  Tensor x = Tensor::zeros(Shape{2, 3, 5, 5});
  Tensor w = Tensor::zeros(Shape{4, 3, 3, 3});
  auto message = [](auto f) {
    try {
      f();
    } catch (const glassbox::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  std::string m = message([&] { ga::conv2d(x, Tensor::zeros(Shape{4, 2, 3, 3}), Tensor()); });
  EXPECT_NE(m.find("conv2d: input [2, 3, 5, 5], weight [4, 2, 3, 3]"), std::string::npos) << m;
  EXPECT_NE(m.find("channel"), std::string::npos) << m;
  m = message([&] { ga::conv2d(x, w, Tensor::zeros(Shape{3})); });
  EXPECT_NE(m.find("bias [3]"), std::string::npos) << m;
  m = message([&] { ga::conv2d(Tensor::zeros(Shape{3, 5, 5}), w, Tensor()); });
  EXPECT_NE(m.find("4-d"), std::string::npos) << m;
  m = message([&] { ga::conv2d(x, w, Tensor(), 0); });
  EXPECT_NE(m.find("stride 0"), std::string::npos) << m;
  m = message([&] { ga::conv2d(x, w, Tensor(), 1, -1); });
  EXPECT_NE(m.find("padding -1"), std::string::npos) << m;
  m = message([&] { ga::conv2d(Tensor::zeros(Shape{1, 3, 2, 2}), w, Tensor()); });
  EXPECT_NE(m.find("larger than the padded input"), std::string::npos) << m;
  m = message([&] { ga::conv2d(x, Tensor::zeros(Shape{4, 3, 3, 3}, 0), Tensor()); });
  EXPECT_NE(m.find("different devices"), std::string::npos) << m;
}

TEST(Reshape, GradientAndViewSemantics) {
  std::mt19937 rng(9);
  check_op(
      "reshape",
      [](const TensorList& t) {
        return ga::reshape(t[0], Shape{3, 2}) * 3.0F;
      },
      [](const std::vector<Values>& x) {
        Values y = x[0];
        for (double& v : y) v *= 3.0;
        return y;
      },
      {random_leaf(Shape{2, 3}, rng)});
  check_op(
      "flatten", [](const TensorList& t) { return ga::flatten(t[0]) * 2.0F; },
      [](const std::vector<Values>& x) {
        Values y = x[0];
        for (double& v : y) v *= 2.0;
        return y;
      },
      {random_leaf(Shape{2, 2, 1, 3}, rng)});
  Tensor a = Tensor::ones(Shape{2, 3});
  Tensor v = ga::reshape(a, Shape{6});
  a.mul_(2.0F);
  EXPECT_EQ(v.data()[5], 2.0F);  // same storage
  EXPECT_EQ(v.version(), a.version());
  EXPECT_EQ(ga::flatten(Tensor::zeros(Shape{4, 2, 3})).shape(), (Shape{4, 6}));
  try {
    ga::reshape(a, Shape{4});
    FAIL();
  } catch (const glassbox::Error& e) {
    EXPECT_NE(std::string(e.what()).find("reshape: cannot view a tensor of shape [2, 3] (6 elements) as [4]"),
              std::string::npos)
        << e.what();
  }
}

// A conv -> relu -> conv -> flatten -> matmul -> cross-entropy network under
// checkpoint learns to tell two fixed images apart: the composition the demo
// trains, small enough for a unit test.
TEST(Conv2d, SmallNetworkLearnsUnderCheckpoint) {
  std::mt19937 rng(21);
  Tensor w1 = random_leaf(Shape{4, 1, 3, 3}, rng, -0.5, 0.5);
  Tensor b1 = random_leaf(Shape{4}, rng, -0.1, 0.1);
  Tensor w2 = random_leaf(Shape{4, 4, 3, 3}, rng, -0.3, 0.3);
  Tensor fc = random_leaf(Shape{4 * 3 * 3, 2}, rng, -0.3, 0.3);
  std::vector<float> images(2 * 36, 0.0F);
  for (int i = 0; i < 6; ++i) {
    images[static_cast<std::size_t>(2 * 6 + i)] = 1.0F;       // image 0: a horizontal bar
    images[static_cast<std::size_t>(36 + i * 6 + 3)] = 1.0F;  // image 1: a vertical bar
  }
  Tensor x = Tensor::from(Shape{2, 1, 6, 6}, images);
  const std::vector<std::int64_t> labels{0, 1};
  TensorList params{w1, b1, w2, fc};
  auto loss_now = [&] {
    TensorList h = ga::checkpoint(
        [](const TensorList& in) { return TensorList{ga::relu(ga::conv2d(in[0], in[1], in[2], 1, 1))}; }, {x, w1, b1});
    Tensor z = ga::relu(ga::conv2d(h[0], w2, Tensor(), 2, 1));
    return ga::cross_entropy(ga::matmul(ga::flatten(z), fc), labels);
  };
  float first = 0.0F, last = 0.0F;
  for (int step = 0; step < 30; ++step) {
    Tensor loss = loss_now();
    if (step == 0) first = loss.item();
    last = loss.item();
    TensorList g = ga::grad({loss}, params);
    ga::NoGradGuard no_grad;
    for (std::size_t i = 0; i < params.size(); ++i) params[i].add_(g[i] * -0.5F);
  }
  EXPECT_LT(last, first * 0.5F) << "first " << first << " last " << last;
}

}  // namespace
