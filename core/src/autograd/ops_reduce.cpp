// Reductions to a scalar and their backward nodes.
#include "glassbox/autograd/ops.hpp"
#include "op_support.hpp"
#include "tensor_math.hpp"

namespace glassbox::autograd {

namespace {

// d(scale * sum(x)) / dx: the incoming scalar times `scale`, everywhere.
class SumBackward final : public Node {
 public:
  SumBackward(int device, std::vector<Edge> edges, Shape shape, float scale, const char* name)
      : Node(device, std::move(edges)), shape_(shape), scale_(scale), name_(name) {}
  TensorList apply(TensorList&& grads) override {
    return {Tensor::full(shape_, grads[0].item() * scale_, device())};
  }
  const char* name() const noexcept override { return name_; }

 private:
  Shape shape_;
  float scale_;
  const char* name_;
};

class MseLossBackward final : public Node {
 public:
  MseLossBackward(int device, std::vector<Edge> edges, const Tensor& input, const Tensor& target)
      : Node(device, std::move(edges)), input_(input), target_(target) {}
  TensorList apply(TensorList&& grads) override {
    Tensor x = input_.unpack(name());
    float scale = 2.0F * grads[0].item() / static_cast<float>(x.numel());
    Tensor gx = math::zip(x, target_.unpack(name()), [scale](float a, float b) { return scale * (a - b); });
    return {gx, math::map(gx, [](float v) { return -v; })};
  }
  const char* name() const noexcept override { return "MseLossBackward"; }
  void release_variables() override {
    input_.release();
    target_.release();
  }

 private:
  SavedTensor input_, target_;
};

double total(const Tensor& x) {
  double s = 0.0;
  for (float v : x.data()) s += v;
  return s;
}

}  // namespace

Tensor sum(const Tensor& x) {
  detail::check_defined("sum", x);
  Tensor out = Tensor::scalar(static_cast<float>(total(x)), x.device());
  return detail::record<SumBackward>(out, {&x}, x.shape(), 1.0F, "SumBackward");
}

Tensor mean(const Tensor& x) {
  detail::check_defined("mean", x);
  auto n = static_cast<double>(x.numel());
  Tensor out = Tensor::scalar(static_cast<float>(total(x) / n), x.device());
  return detail::record<SumBackward>(out, {&x}, x.shape(), static_cast<float>(1.0 / n), "MeanBackward");
}

Tensor mse_loss(const Tensor& input, const Tensor& target) {
  detail::check_same("mse_loss", input, target);
  double s = 0.0;
  std::span<const float> x = input.data();
  std::span<const float> t = target.data();
  for (std::size_t i = 0; i < x.size(); ++i) s += static_cast<double>(x[i] - t[i]) * (x[i] - t[i]);
  Tensor out = Tensor::scalar(static_cast<float>(s / static_cast<double>(x.size())), input.device());
  return detail::record<MseLossBackward>(out, {&input, &target}, input, target);
}

}  // namespace glassbox::autograd
