// log_softmax and negative log-likelihood over [n, c] tensors.
#include <algorithm>
#include <cmath>
#include <string>

#include "glassbox/autograd/ops.hpp"
#include "glassbox/error.hpp"
#include "op_support.hpp"
#include "tensor_math.hpp"

namespace glassbox::autograd {

namespace {

struct Rows {
  std::size_t n, c;
  explicit Rows(const Shape& s) : n(static_cast<std::size_t>(s[0])), c(static_cast<std::size_t>(s[1])) {}
};

// The host versions of the device kernels of the same names.
void host_log_softmax(const float* x, float* out, Rows r) {
  for (std::size_t i = 0; i < r.n; ++i) {
    const float* row = x + i * r.c;
    float top = *std::max_element(row, row + r.c);
    double s = 0.0;
    for (std::size_t j = 0; j < r.c; ++j) s += std::exp(static_cast<double>(row[j] - top));
    auto log_sum = static_cast<float>(std::log(s)) + top;
    for (std::size_t j = 0; j < r.c; ++j) out[i * r.c + j] = row[j] - log_sum;
  }
}

void host_log_softmax_backward(const float* g, const float* y, float* out, Rows r) {
  for (std::size_t i = 0; i < r.n; ++i) {
    float gsum = 0.0F;
    for (std::size_t j = 0; j < r.c; ++j) gsum += g[i * r.c + j];
    for (std::size_t j = 0; j < r.c; ++j) out[i * r.c + j] = g[i * r.c + j] - std::exp(y[i * r.c + j]) * gsum;
  }
}

float host_nll_loss(const float* log_probs, const std::vector<std::int64_t>& targets, Rows r) {
  double s = 0.0;
  for (std::size_t i = 0; i < r.n; ++i) s -= log_probs[i * r.c + static_cast<std::size_t>(targets[i])];
  return static_cast<float>(s / static_cast<double>(r.n));
}

// dx = g - softmax(x) * sum(g) per row; softmax from the saved output.
class LogSoftmaxBackward final : public Node {
 public:
  LogSoftmaxBackward(int device, EdgeList edges, const Tensor& out) : Node(device, std::move(edges)), out_(out) {}
  TensorList apply(TensorList&& grads) override {
    Tensor y = out_.unpack(name());
    Rows r(y.shape());
    Tensor gx = Tensor::empty(y.shape(), y.device());
    if (DeviceKernels* k = math::kernels_of(y)) {
      k->log_softmax_backward(y.device(), math::ptr(grads[0]), math::ptr(y), math::mutable_ptr(gx), r.n, r.c);
    } else {
      host_log_softmax_backward(math::ptr(grads[0]), math::ptr(y), math::mutable_ptr(gx), r);
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
  NllLossBackward(int device, EdgeList edges, Shape shape, std::vector<std::int64_t> targets)
      : Node(device, std::move(edges)), shape_(shape), targets_(std::move(targets)) {}
  TensorList apply(TensorList&& grads) override {
    const Tensor& g = grads[0];
    Rows r(shape_);
    if (DeviceKernels* k = math::kernels_of(g)) {
      Tensor gx = Tensor::empty(shape_, device());
      k->nll_loss_backward(device(), math::ptr(g), targets_.data(), math::mutable_ptr(gx), r.n, r.c);
      return {gx};
    }
    Tensor gx = Tensor::zeros(shape_, device());
    float each = -g.item() / static_cast<float>(r.n);
    std::span<float> o = gx.mutable_data();
    for (std::size_t i = 0; i < r.n; ++i) o[i * r.c + static_cast<std::size_t>(targets_[i])] = each;
    return {gx};
  }
  const char* name() const noexcept override { return "NllLossBackward"; }

 private:
  Shape shape_;
  std::vector<std::int64_t> targets_;
};

void check_targets(const std::vector<std::int64_t>& targets, Rows r) {
  if (targets.size() != r.n || r.n == 0) {
    throw Error("nll_loss: " + std::to_string(targets.size()) + " targets for " + std::to_string(r.n) + " rows");
  }
  for (std::size_t i = 0; i < r.n; ++i) {
    if (targets[i] < 0 || static_cast<std::size_t>(targets[i]) >= r.c) {
      throw Error("nll_loss: target " + std::to_string(targets[i]) + " of row " + std::to_string(i) +
                  " is outside [0, " + std::to_string(r.c) + ")");
    }
  }
}

}  // namespace

Tensor log_softmax(const Tensor& x) {
  detail::check_ndim("log_softmax", x, 2);
  Rows r(x.shape());
  Tensor out = Tensor::empty(x.shape(), x.device());
  if (DeviceKernels* k = math::kernels_of(x)) {
    k->log_softmax(x.device(), math::ptr(x), math::mutable_ptr(out), r.n, r.c);
  } else {
    host_log_softmax(math::ptr(x), math::mutable_ptr(out), r);
  }
  return detail::record<LogSoftmaxBackward>(out, {&x}, out);
}

Tensor nll_loss(const Tensor& log_probs, const std::vector<std::int64_t>& targets) {
  detail::check_ndim("nll_loss", log_probs, 2);
  Rows r(log_probs.shape());
  check_targets(targets, r);
  Tensor out;
  if (DeviceKernels* k = math::kernels_of(log_probs)) {
    out = Tensor::empty(Shape{}, log_probs.device());
    k->nll_loss(log_probs.device(), math::ptr(log_probs), targets.data(), math::mutable_ptr(out), r.n, r.c);
  } else {
    out = Tensor::scalar(host_nll_loss(math::ptr(log_probs), targets, r), log_probs.device());
  }
  return detail::record<NllLossBackward>(out, {&log_probs}, log_probs.shape(), targets);
}

Tensor cross_entropy(const Tensor& logits, const std::vector<std::int64_t>& targets) {
  return nll_loss(log_softmax(logits), targets);
}

}  // namespace glassbox::autograd
