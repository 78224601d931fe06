// Reductions to a scalar and their backward nodes.
#include "glassbox/autograd/ops.hpp"
#include "op_support.hpp"
#include "tensor_math.hpp"

namespace glassbox::autograd {

namespace {

// d(scale * sum(x)) / dx: the incoming scalar times `scale`, everywhere.
class SumBackward final : public Node {
 public:
  SumBackward(int device, EdgeList edges, Shape shape, float scale, const char* name)
      : Node(device, std::move(edges)), shape_(shape), scale_(scale), name_(name) {}
  TensorList apply(TensorList&& grads) override {
    return detail::only_result(std::move(grads), math::broadcast(grads[0], scale_, shape_));
  }
  const char* name() const noexcept override { return name_; }

 private:
  Shape shape_;
  float scale_;
  const char* name_;
};

// d mean((x - t)^2): (x - t) * 2g / n to x, its negation to t.
class MseLossBackward final : public Node {
 public:
  MseLossBackward(int device, EdgeList edges, const Tensor& input, const Tensor& target)
      : Node(device, std::move(edges)), input_(input), target_(target) {}
  TensorList apply(TensorList&& grads) override {
    Tensor x = input_.unpack(name());
    Tensor diff = math::binary(BinaryOp::sub, x, target_.unpack(name()));
    Tensor scale = math::broadcast(grads[0], 2.0F / static_cast<float>(x.numel()), x.shape());
    Tensor gx = math::binary(BinaryOp::mul, diff, scale);
    return {gx, math::unary(UnaryOp::scale, gx, -1.0F)};
  }
  const char* name() const noexcept override { return "MseLossBackward"; }
  void release_variables() override {
    input_.release();
    target_.release();
  }

 private:
  SavedTensor input_, target_;
};

}  // namespace

Tensor sum(const Tensor& x) {
  detail::check_defined("sum", x);
  Tensor out = math::reduce(ReduceOp::sum, x, nullptr, 1.0F);
  return detail::record<SumBackward>(out, {&x}, x.shape(), 1.0F, "SumBackward");
}

Tensor mean(const Tensor& x) {
  detail::check_defined("mean", x);
  auto scale = static_cast<float>(1.0 / static_cast<double>(x.numel()));
  Tensor out = math::reduce(ReduceOp::sum, x, nullptr, scale);
  return detail::record<SumBackward>(out, {&x}, x.shape(), scale, "MeanBackward");
}

Tensor mse_loss(const Tensor& input, const Tensor& target) {
  detail::check_same("mse_loss", input, target);
  auto scale = static_cast<float>(1.0 / static_cast<double>(input.numel()));
  Tensor out = math::reduce(ReduceOp::squared_diff, input, &target, scale);
  return detail::record<MseLossBackward>(out, {&input, &target}, input, target);
}

}  // namespace glassbox::autograd
