// checkpoint: the same gradients as the plain graph, for the tensors passed
// in and for the weights the checkpointed function closes over, under
// backward (into grad) and under grad (into its result only).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "glassbox/autograd/autograd.hpp"
#include "glassbox/autograd/checkpoint.hpp"
#include "glassbox/autograd/ops.hpp"
#include "glassbox/error.hpp"
#include "gradient_check.hpp"

namespace ga = glassbox::autograd;
using ga::Shape;
using ga::Tensor;
using ga::TensorList;

namespace {

using glassbox::test::expect_gradient_near;
using glassbox::test::numeric_gradients;
using glassbox::test::random_leaf;
using glassbox::test::Values;
using glassbox::test::values_of;

TEST(Checkpoint, SameGradientsAsWithoutAndSavesOnlyInputs) {
  std::mt19937 rng(3);
  Tensor x = random_leaf(Shape{2, 3}, rng);
  Tensor w = random_leaf(Shape{3, 3}, rng);
  auto block = [&](const TensorList& in) { return TensorList{ga::tanh(ga::matmul(in[0], in[1]))}; };
  Tensor plain = ga::sum(block({x, w})[0]);
  TensorList want = ga::grad({plain}, {x, w});
  int calls = 0;
  TensorList out = ga::checkpoint(
      [&](const TensorList& in) {
        ++calls;
        return block(in);
      },
      {x, w});
  EXPECT_EQ(out[0].grad_fn()->name(), std::string("CheckpointBackward"));
  TensorList got = ga::grad({ga::sum(out[0])}, {x, w});
  EXPECT_EQ(calls, 2);  // forward, then the recompute in backward
  for (std::size_t k = 0; k < 2; ++k) {
    for (std::int64_t i = 0; i < want[k].numel(); ++i) {
      EXPECT_FLOAT_EQ(got[k].data()[static_cast<std::size_t>(i)], want[k].data()[static_cast<std::size_t>(i)]);
    }
  }
}

TEST(Checkpoint, InputsChangedInPlaceAreDetected) {
  Tensor x = Tensor::ones(Shape{2}).set_requires_grad(true);
  Tensor scale = Tensor::ones(Shape{2});
  TensorList out = ga::checkpoint([](const TensorList& in) { return TensorList{in[0] * in[1]}; }, {x, scale});
  scale.mul_(3.0F);
  EXPECT_THROW(ga::backward({ga::sum(out[0])}), glassbox::Error);
}

// A network that uses one weight w four ways: closed over by two
// checkpoints in a row, in an op outside any checkpoint, and closed over by
// a checkpoint nested in another one that closes over w itself:
//   h1 = tanh(x w), h2 = tanh(h1 w), h3 = h2 w, h4 = tanh(h3 w) w,
//   loss = sum(h4 * r).
class ClosedOverWeight : public ::testing::Test {
 protected:
  static constexpr std::size_t kRows = 2, kCols = 3;

  Tensor loss(const Tensor& x, const Tensor& w) const {
    ga::CheckpointFn block = [w](const TensorList& in) { return TensorList{ga::tanh(ga::matmul(in[0], w))}; };
    ga::CheckpointFn outer = [w, block](const TensorList& in) {
      return TensorList{ga::matmul(ga::checkpoint(block, in)[0], w)};
    };
    Tensor h = ga::checkpoint(block, {x})[0];
    h = ga::checkpoint(block, {h})[0];
    h = ga::matmul(h, w);
    h = ga::checkpoint(outer, {h})[0];
    return ga::sum(h * r_);
  }

  // d loss / dx and d loss / dw by central differences of the same network in double.
  std::vector<Values> numeric() const {
    Values r = values_of(r_);
    auto network = [r](const std::vector<Values>& at) {
      const Values& w = at[1];
      Values h = tanh_of(matmul(at[0], w));
      h = tanh_of(matmul(h, w));
      h = matmul(h, w);
      h = matmul(tanh_of(matmul(h, w)), w);
      double s = 0;
      for (std::size_t i = 0; i < h.size(); ++i) s += h[i] * r[i];
      return s;
    };
    return numeric_gradients(network, {values_of(x_), values_of(w_)});
  }

  static Values matmul(const Values& a, const Values& w) {
    Values y(kRows * kCols, 0.0);
    for (std::size_t i = 0; i < kRows; ++i)
      for (std::size_t p = 0; p < kCols; ++p)
        for (std::size_t j = 0; j < kCols; ++j) y[i * kCols + j] += a[i * kCols + p] * w[p * kCols + j];
    return y;
  }
  static Values tanh_of(Values v) {
    for (double& e : v) e = std::tanh(e);
    return v;
  }

  std::mt19937 rng_{11};
  Tensor x_ = random_leaf(Shape{kRows, kCols}, rng_);
  Tensor w_ = random_leaf(Shape{kCols, kCols}, rng_);
  Tensor r_ = random_leaf(Shape{kRows, kCols}, rng_).detach();
};

TEST_F(ClosedOverWeight, BackwardAccumulatesItsGradientOnce) {
  ga::backward({loss(x_, w_)});
  std::vector<Values> want = numeric();
  expect_gradient_near(x_.grad(), want[0], "x.grad");
  expect_gradient_near(w_.grad(), want[1], "w.grad");
}

TEST_F(ClosedOverWeight, GradReturnsItsGradientAndLeavesGradAlone) {
  TensorList got = ga::grad({loss(x_, w_)}, {x_, w_});
  std::vector<Values> want = numeric();
  expect_gradient_near(got[0], want[0], "grad x");
  expect_gradient_near(got[1], want[1], "grad w");
  EXPECT_FALSE(x_.grad().defined());
  EXPECT_FALSE(w_.grad().defined());
}

TEST_F(ClosedOverWeight, GradForTheInputAloneLeavesTheWeightAlone) {
  TensorList got = ga::grad({loss(x_, w_)}, {x_});
  expect_gradient_near(got[0], numeric()[0], "grad x");
  EXPECT_FALSE(w_.grad().defined());
}

// A first block takes data that needs no gradient and closes over its
// weights: still a checkpoint, and the weights still get their gradients.
TEST(Checkpoint, NoInputNeedsGradButAClosedOverWeightDoes) {
  Tensor image = Tensor::from(Shape{2}, {0.5F, 4.0F});
  Tensor w = Tensor::from(Shape{2}, {1.5F, -2.0F}).set_requires_grad(true);
  int calls = 0;
  auto block = [w, &calls](const TensorList& in) {
    ++calls;
    return TensorList{ga::tanh(in[0] * w)};
  };
  Tensor out = ga::checkpoint(block, {image})[0];
  ASSERT_NE(out.grad_fn(), nullptr);
  EXPECT_EQ(out.grad_fn()->name(), std::string("CheckpointBackward"));
  ga::backward({ga::sum(out)});
  EXPECT_EQ(calls, 2);  // forward, then the recompute in backward
  for (std::size_t i = 0; i < 2; ++i) {
    const double t = std::tanh(double{image.data()[i]} * w.data()[i]);
    EXPECT_NEAR(w.grad().data()[i], (1 - t * t) * image.data()[i], 1e-6);
  }
  Tensor constant = ga::checkpoint([](const TensorList& in) { return TensorList{in[0] * 2.0F}; }, {image})[0];
  EXPECT_FALSE(constant.requires_grad());  // nothing needs a gradient: no graph at all
}

// DataParallel's shape: threads backpropagate at once through checkpoints that
// close over one weight; its gradient is the sum of theirs.
TEST(Checkpoint, ThreadsSharingAClosedOverWeightAddUp) {
  constexpr int kThreads = 8;
  Tensor w = Tensor::from(Shape{2}, {1.5F, -2.0F}).set_requires_grad(true);
  auto block = [w](const TensorList& in) { return TensorList{in[0] * w}; };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Tensor x = Tensor::full(Shape{2}, static_cast<float>(t)).set_requires_grad(true);
      ga::backward({ga::sum(ga::checkpoint(block, {x})[0])});
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_FLOAT_EQ(w.grad().data()[0], 28.0F);  // 0 + 1 + ... + 7
  EXPECT_FLOAT_EQ(w.grad().data()[1], 28.0F);
}

// A tensor with a history, closed over: the nested pass carries its gradient
// on through the nodes that made it.
TEST(Checkpoint, AClosedOverTensorWithAHistoryPassesItsGradientOn) {
  Tensor w = Tensor::from(Shape{2}, {1.5F, -2.0F}).set_requires_grad(true);
  Tensor x = Tensor::from(Shape{2}, {0.5F, 4.0F}).set_requires_grad(true);
  Tensor squared = w * w;
  auto block = [squared](const TensorList& in) { return TensorList{in[0] * squared}; };
  ga::backward({ga::sum(ga::checkpoint(block, {x})[0])});
  EXPECT_FLOAT_EQ(x.grad().data()[0], 2.25F);  // w^2
  EXPECT_FLOAT_EQ(x.grad().data()[1], 4.0F);
  EXPECT_FLOAT_EQ(w.grad().data()[0], 1.5F);  // 2 w x
  EXPECT_FLOAT_EQ(w.grad().data()[1], -16.0F);
}

// ...and frees those nodes' saved tensors, so an outer pass that needs them
// too fails and says why, instead of computing with freed tensors.
TEST(Checkpoint, AClosedOverTensorWithAHistoryUsedOutsideTooIsAClearError) {
  Tensor w = Tensor::from(Shape{2}, {1.5F, -2.0F}).set_requires_grad(true);
  Tensor x = Tensor::from(Shape{2}, {0.5F, 4.0F}).set_requires_grad(true);
  Tensor squared = w * w;
  auto block = [squared](const TensorList& in) { return TensorList{in[0] * squared}; };
  Tensor loss = ga::sum(ga::checkpoint(block, {x})[0] + squared);
  try {
    ga::backward({loss});
    FAIL() << "backward ran twice through the nodes that made the closed-over tensor";
  } catch (const glassbox::Error& e) {
    EXPECT_NE(std::string(e.what()).find("a second time"), std::string::npos) << e.what();
  }
}

}  // namespace
