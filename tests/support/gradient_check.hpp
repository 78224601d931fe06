#pragma once
// Gradient checking for autograd ops: an op's value against a float64
// reference, and its gradient against central finite differences of it.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "glassbox/autograd/autograd.hpp"
#include "glassbox/autograd/tensor.hpp"

namespace glassbox::test {

namespace ga = glassbox::autograd;
using ga::Shape;
using ga::Tensor;
using ga::TensorList;

using Values = std::vector<double>;
using RefFn = std::function<Values(const std::vector<Values>&)>;
using OpFn = std::function<Tensor(const TensorList&)>;

inline Tensor random_leaf(Shape shape, std::mt19937& rng, double lo = -1.0, double hi = 1.0,
                          bool away_from_zero = false) {
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<float> v(static_cast<std::size_t>(shape.numel()));
  for (float& x : v) {
    double d = u(rng);
    if (away_from_zero && std::abs(d) < 0.1) d += d < 0 ? -0.2 : 0.2;
    x = static_cast<float>(d);
  }
  Tensor t = Tensor::from(shape, std::move(v));
  t.set_requires_grad(true);
  return t;
}

inline Values values_of(const Tensor& t) { return Values(t.data().begin(), t.data().end()); }

using LossFn = std::function<double(const std::vector<Values>&)>;

/// d loss / d x[k][i] for every element of every x[k], by central differences.
inline std::vector<Values> numeric_gradients(const LossFn& loss, const std::vector<Values>& x) {
  constexpr double eps = 1e-6;
  std::vector<Values> grads;
  for (std::size_t k = 0; k < x.size(); ++k) {
    Values& g = grads.emplace_back(x[k].size());
    for (std::size_t i = 0; i < x[k].size(); ++i) {
      std::vector<Values> plus = x, minus = x;
      plus[k][i] += eps;
      minus[k][i] -= eps;
      g[i] = (loss(plus) - loss(minus)) / (2 * eps);
    }
  }
  return grads;
}

/// An autograd gradient against a numeric one, element by element.
inline void expect_gradient_near(const Tensor& got, const Values& want, const char* what) {
  ASSERT_TRUE(got.defined()) << what << ": no gradient";
  ASSERT_EQ(static_cast<std::size_t>(got.numel()), want.size()) << what;
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(got.data()[i], want[i], 1e-3 * (1 + std::abs(want[i]))) << what << " element " << i;
  }
}

// Checks op's value against ref, and d(sum(w * op(inputs)))/d(input) against
// central differences of the same sum computed with ref in double precision.
inline void check_op(const char* what, const OpFn& op, const RefFn& ref, const TensorList& inputs) {
  SCOPED_TRACE(what);
  std::mt19937 rng(7);
  std::vector<Values> x;
  for (const Tensor& t : inputs) x.push_back(values_of(t));
  Tensor out = op(inputs);
  Values want = ref(x);
  ASSERT_EQ(static_cast<std::size_t>(out.numel()), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(out.data()[i], want[i], 1e-4 * (1 + std::abs(want[i])));

  Tensor w = random_leaf(out.shape(), rng).detach();
  TensorList grads = ga::grad({out}, inputs, {w});
  Values wv = values_of(w);
  auto loss = [&](const std::vector<Values>& at) {
    Values y = ref(at);
    double s = 0.0;
    for (std::size_t i = 0; i < y.size(); ++i) s += wv[i] * y[i];
    return s;
  };
  std::vector<Values> numeric = numeric_gradients(loss, x);
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    expect_gradient_near(grads[k], numeric[k], ("input " + std::to_string(k)).c_str());
  }
}

}  // namespace glassbox::test
