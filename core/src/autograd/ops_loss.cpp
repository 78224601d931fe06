// log_softmax and negative log-likelihood over [n, c] tensors.
#include <cmath>
#include <string>

#include "glassbox/autograd/ops.hpp"
#include "glassbox/error.hpp"
#include "op_support.hpp"

namespace glassbox::autograd {

namespace {

struct Rows {
  std::size_t n, c;
  explicit Rows(const Tensor& t)
      : n(static_cast<std::size_t>(t.shape()[0])), c(static_cast<std::size_t>(t.shape()[1])) {}
};

// dx = g - softmax(x) * sum(g) per row; softmax from the saved output.
class LogSoftmaxBackward final : public Node {
 public:
  LogSoftmaxBackward(int device, std::vector<Edge> edges, const Tensor& out)
      : Node(device, std::move(edges)), out_(out) {}
  TensorList apply(TensorList&& grads) override {
    Tensor y = out_.unpack(name());
    Rows r(y);
    Tensor gx = Tensor::zeros(y.shape(), y.device());
    std::span<const float> g = grads[0].data();
    std::span<const float> yv = y.data();
    std::span<float> o = gx.mutable_data();
    for (std::size_t i = 0; i < r.n; ++i) {
      float gsum = 0.0F;
      for (std::size_t j = 0; j < r.c; ++j) gsum += g[i * r.c + j];
      for (std::size_t j = 0; j < r.c; ++j) o[i * r.c + j] = g[i * r.c + j] - std::exp(yv[i * r.c + j]) * gsum;
    }
    return {gx};
  }
  const char* name() const noexcept override { return "LogSoftmaxBackward"; }
  void release_variables() override { out_.release(); }

 private:
  SavedTensor out_;
};

class NllLossBackward final : public Node {
 public:
  NllLossBackward(int device, std::vector<Edge> edges, Shape shape, std::vector<std::int64_t> targets)
      : Node(device, std::move(edges)), shape_(shape), targets_(std::move(targets)) {}
  TensorList apply(TensorList&& grads) override {
    Tensor gx = Tensor::zeros(shape_, device());
    auto c = static_cast<std::size_t>(shape_[1]);
    float each = -grads[0].item() / static_cast<float>(targets_.size());
    std::span<float> o = gx.mutable_data();
    for (std::size_t i = 0; i < targets_.size(); ++i) o[i * c + static_cast<std::size_t>(targets_[i])] = each;
    return {gx};
  }
  const char* name() const noexcept override { return "NllLossBackward"; }

 private:
  Shape shape_;
  std::vector<std::int64_t> targets_;
};

}  // namespace

Tensor log_softmax(const Tensor& x) {
  detail::check_ndim("log_softmax", x, 2);
  Rows r(x);
  Tensor out = Tensor::zeros(x.shape(), x.device());
  std::span<const float> in = x.data();
  std::span<float> o = out.mutable_data();
  for (std::size_t i = 0; i < r.n; ++i) {
    const float* row = in.data() + i * r.c;
    float top = row[0];
    for (std::size_t j = 1; j < r.c; ++j) top = std::max(top, row[j]);
    double s = 0.0;
    for (std::size_t j = 0; j < r.c; ++j) s += std::exp(static_cast<double>(row[j] - top));
    auto log_sum = static_cast<float>(std::log(s)) + top;
    for (std::size_t j = 0; j < r.c; ++j) o[i * r.c + j] = row[j] - log_sum;
  }
  return detail::record<LogSoftmaxBackward>(out, {&x}, out);
}

Tensor nll_loss(const Tensor& log_probs, const std::vector<std::int64_t>& targets) {
  detail::check_ndim("nll_loss", log_probs, 2);
  Rows r(log_probs);
  if (targets.size() != r.n || r.n == 0) {
    throw Error("nll_loss: " + std::to_string(targets.size()) + " targets for " + std::to_string(r.n) + " rows");
  }
  double s = 0.0;
  for (std::size_t i = 0; i < r.n; ++i) {
    if (targets[i] < 0 || static_cast<std::size_t>(targets[i]) >= r.c) {
      throw Error("nll_loss: target " + std::to_string(targets[i]) + " of row " + std::to_string(i) +
                  " is outside [0, " + std::to_string(r.c) + ")");
    }
    s -= log_probs.data()[i * r.c + static_cast<std::size_t>(targets[i])];
  }
  Tensor out = Tensor::scalar(static_cast<float>(s / static_cast<double>(r.n)), log_probs.device());
  return detail::record<NllLossBackward>(out, {&log_probs}, log_probs.shape(), targets);
}

Tensor cross_entropy(const Tensor& logits, const std::vector<std::int64_t>& targets) {
  return nll_loss(log_softmax(logits), targets);
}

}  // namespace glassbox::autograd
