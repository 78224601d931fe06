// Elementwise ops and their backward nodes.
#include "glassbox/autograd/ops.hpp"
#include "op_support.hpp"
#include "tensor_math.hpp"

namespace glassbox::autograd {

namespace {

Tensor negate(const Tensor& g) { return math::unary(UnaryOp::scale, g, -1.0F); }

// d(a ± b): the same gradient to a, ± it to b.
class AddBackward final : public Node {
 public:
  AddBackward(int device, EdgeList edges, float sign) : Node(device, std::move(edges)), sign_(sign) {}
  TensorList apply(TensorList&& grads) override {
    Tensor& g = grads[0];
    return {g, sign_ > 0 ? g : negate(g)};
  }
  const char* name() const noexcept override { return sign_ > 0 ? "AddBackward" : "SubBackward"; }

 private:
  float sign_;
};

class MulBackward final : public Node {
 public:
  MulBackward(int device, EdgeList edges, const Tensor& a, const Tensor& b)
      : Node(device, std::move(edges)), a_(a), b_(b) {}
  TensorList apply(TensorList&& grads) override {
    Tensor a = a_.unpack(name());
    Tensor b = b_.unpack(name());
    return {math::binary(BinaryOp::mul, grads[0], b), math::binary(BinaryOp::mul, grads[0], a)};
  }
  const char* name() const noexcept override { return "MulBackward"; }
  void release_variables() override {
    a_.release();
    b_.release();
  }

 private:
  SavedTensor a_, b_;
};

// d(a / b): g / b to a, -(g / b) * (a / b) to b.
class DivBackward final : public Node {
 public:
  DivBackward(int device, EdgeList edges, const Tensor& a, const Tensor& b)
      : Node(device, std::move(edges)), a_(a), b_(b) {}
  TensorList apply(TensorList&& grads) override {
    Tensor a = a_.unpack(name());
    Tensor b = b_.unpack(name());
    Tensor ga = math::binary(BinaryOp::div, grads[0], b);
    Tensor gb = math::binary(BinaryOp::mul, ga, math::binary(BinaryOp::div, a, b));
    math::unary_in_place(UnaryOp::scale, gb, -1.0F);
    return {ga, gb};
  }
  const char* name() const noexcept override { return "DivBackward"; }
  void release_variables() override {
    a_.release();
    b_.release();
  }

 private:
  SavedTensor a_, b_;
};

class MulScalarBackward final : public Node {
 public:
  MulScalarBackward(int device, EdgeList edges, float factor) : Node(device, std::move(edges)), factor_(factor) {}
  TensorList apply(TensorList&& grads) override {
    Tensor& g = grads[0];
    if (math::exclusively_owned(g)) {  // reuse the buffer: chains pass one gradient along
      math::unary_in_place(UnaryOp::scale, g, factor_);
      return detail::only_result(std::move(grads), std::move(g));
    }
    return detail::only_result(std::move(grads), math::unary(UnaryOp::scale, g, factor_));
  }
  const char* name() const noexcept override { return "MulScalarBackward"; }

 private:
  float factor_;
};

// Backward of y = f(x) from the saved output: `Grad` multiplies the gradient
// by the derivative written in terms of y.
template <BinaryOp Grad>
class PointwiseBackward final : public Node {
 public:
  PointwiseBackward(int device, EdgeList edges, const Tensor& out, const char* name)
      : Node(device, std::move(edges)), out_(out), name_(name) {}
  TensorList apply(TensorList&& grads) override {
    return detail::only_result(std::move(grads), math::binary(Grad, grads[0], out_.unpack(name())));
  }
  const char* name() const noexcept override { return name_; }
  void release_variables() override { out_.release(); }

 private:
  SavedTensor out_;
  const char* name_;
};

template <UnaryOp Op, BinaryOp Grad>
Tensor pointwise(const char* op, const char* node_name, const Tensor& x) {
  detail::check_defined(op, x);
  Tensor out = math::unary(Op, x);
  return detail::record<PointwiseBackward<Grad>>(out, {&x}, out, node_name);
}

// A copy of `x`'s values on `device`, from whichever memory holds them to
// whichever memory `device` keeps tensors in.
Tensor copy_to(const Tensor& x, int device) {
  DeviceKernels* src = math::kernels_of(x);
  if (src == nullptr) return Tensor::from(x.shape(), std::vector<float>(x.data().begin(), x.data().end()), device);
  Tensor out = Tensor::empty(x.shape(), device);
  auto n = static_cast<std::size_t>(x.numel());
  if (out.in_device_memory()) {
    src->copy(x.device(), math::ptr(x), device, math::mutable_ptr(out), n);
  } else {
    src->copy_to_host(x.device(), math::ptr(x), math::mutable_ptr(out), n);
  }
  return out;
}

class ToBackward final : public Node {
 public:
  ToBackward(int device, EdgeList edges, int source) : Node(device, std::move(edges)), source_(source) {}
  TensorList apply(TensorList&& grads) override {
    return detail::only_result(std::move(grads), copy_to(grads[0], source_));
  }
  const char* name() const noexcept override { return "ToBackward"; }

 private:
  int source_;
};

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) {
  detail::check_same("add", a, b);
  return detail::record<AddBackward>(math::binary(BinaryOp::add, a, b), {&a, &b}, 1.0F);
}

Tensor sub(const Tensor& a, const Tensor& b) {
  detail::check_same("sub", a, b);
  return detail::record<AddBackward>(math::binary(BinaryOp::sub, a, b), {&a, &b}, -1.0F);
}

Tensor mul(const Tensor& a, const Tensor& b) {
  detail::check_same("mul", a, b);
  return detail::record<MulBackward>(math::binary(BinaryOp::mul, a, b), {&a, &b}, a, b);
}

Tensor div(const Tensor& a, const Tensor& b) {
  detail::check_same("div", a, b);
  return detail::record<DivBackward>(math::binary(BinaryOp::div, a, b), {&a, &b}, a, b);
}

Tensor mul(const Tensor& a, float factor) {
  detail::check_defined("mul", a);
  return detail::record<MulScalarBackward>(math::unary(UnaryOp::scale, a, factor), {&a}, factor);
}

Tensor relu(const Tensor& x) { return pointwise<UnaryOp::relu, BinaryOp::relu_grad>("relu", "ReluBackward", x); }
Tensor sigmoid(const Tensor& x) {
  return pointwise<UnaryOp::sigmoid, BinaryOp::sigmoid_grad>("sigmoid", "SigmoidBackward", x);
}
Tensor tanh(const Tensor& x) { return pointwise<UnaryOp::tanh, BinaryOp::tanh_grad>("tanh", "TanhBackward", x); }

Tensor to(const Tensor& x, int device) {
  detail::check_defined("to", x);
  Tensor out = copy_to(x, device);
  return detail::record<ToBackward>(out, {&x}, x.device());
}

}  // namespace glassbox::autograd
