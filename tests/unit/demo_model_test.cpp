// The demo's network (examples/glassbox-demo/model.cpp), whose blocks are
// checkpoints that close over their weights: every parameter gets the
// gradient the same network gives without checkpoints.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "glassbox/autograd/autograd.hpp"
#include "glassbox/autograd/ops.hpp"
#include "gradient_check.hpp"
#include "model.hpp"

namespace ga = glassbox::autograd;
using ga::Shape;
using ga::Tensor;
using ga::TensorList;

namespace {

// What SmallCnn::forward computes, with no checkpoint.
Tensor plain_forward(const TensorList& p, const Tensor& images) {
  auto block = [](const Tensor& x, const Tensor& w, const Tensor& b, int stride) {
    return ga::relu(ga::conv2d(x, w, b, stride, 1));
  };
  Tensor h = block(images, p[0], p[1], 1);
  h = block(h, p[2], p[3], 2);
  h = block(h, p[4], p[5], 2);
  return ga::matmul(ga::flatten(h), p[6]);
}

TEST(DemoModel, CheckpointedBlocksGiveEveryParameterItsGradient) {
  glassbox::demo::SmallCnn model(4, 7);
  std::mt19937 rng(5);
  Tensor images = glassbox::test::random_leaf(Shape{2, 1, 16, 16}, rng).detach();
  const std::vector<std::int64_t> labels{1, 3};
  const TensorList& params = model.parameters();
  TensorList want = ga::grad({ga::cross_entropy(plain_forward(params, images), labels)}, params);

  ga::backward({ga::cross_entropy(model.forward(images), labels)});
  for (std::size_t k = 0; k < params.size(); ++k) {
    const Tensor got = params[k].grad();
    ASSERT_TRUE(got.defined()) << "parameter " << k << " got no gradient";
    for (std::size_t i = 0; i < got.data().size(); ++i) {
      const float w = want[k].data()[i];
      EXPECT_NEAR(got.data()[i], w, 1e-5F * (1 + std::abs(w))) << "parameter " << k << " element " << i;
    }
  }
}

}  // namespace
