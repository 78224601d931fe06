// Elementwise ops and their backward nodes.
#include <cmath>

#include "glassbox/autograd/ops.hpp"
#include "op_support.hpp"
#include "tensor_math.hpp"

namespace glassbox::autograd {

namespace {

Tensor negate(const Tensor& g) {
  return math::map(g, [](float x) { return -x; });
}

// d(a ± b): the same gradient to a, ± it to b.
class AddBackward final : public Node {
 public:
  AddBackward(int device, std::vector<Edge> edges, float sign) : Node(device, std::move(edges)), sign_(sign) {}
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
  MulBackward(int device, std::vector<Edge> edges, const Tensor& a, const Tensor& b)
      : Node(device, std::move(edges)), a_(a), b_(b) {}
  TensorList apply(TensorList&& grads) override {
    Tensor a = a_.unpack(name());
    Tensor b = b_.unpack(name());
    auto times = [](float g, float x) { return g * x; };
    return {math::zip(grads[0], b, times), math::zip(grads[0], a, times)};
  }
  const char* name() const noexcept override { return "MulBackward"; }
  void release_variables() override {
    a_.release();
    b_.release();
  }

 private:
  SavedTensor a_, b_;
};

class DivBackward final : public Node {
 public:
  DivBackward(int device, std::vector<Edge> edges, const Tensor& a, const Tensor& b)
      : Node(device, std::move(edges)), a_(a), b_(b) {}
  TensorList apply(TensorList&& grads) override {
    Tensor a = a_.unpack(name());
    Tensor b = b_.unpack(name());
    Tensor ga = math::zip(grads[0], b, [](float g, float y) { return g / y; });
    Tensor gb = math::zip(ga, math::zip(a, b, [](float x, float y) { return x / y; }),
                          [](float gy, float q) { return -gy * q; });
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
  MulScalarBackward(int device, std::vector<Edge> edges, float factor)
      : Node(device, std::move(edges)), factor_(factor) {}
  TensorList apply(TensorList&& grads) override {
    Tensor& g = grads[0];
    if (math::exclusively_owned(g)) {  // reuse the buffer: chains pass one gradient along
      for (float& v : g.mutable_data()) v *= factor_;
      return {std::move(g)};
    }
    return {math::map(g, [f = factor_](float v) { return v * f; })};
  }
  const char* name() const noexcept override { return "MulScalarBackward"; }

 private:
  float factor_;
};

// Backward of y = f(x) from the saved output: dy/dx = Derivative::from_output(y).
template <class Derivative>
class PointwiseBackward final : public Node {
 public:
  PointwiseBackward(int device, std::vector<Edge> edges, const Tensor& out)
      : Node(device, std::move(edges)), out_(out) {}
  TensorList apply(TensorList&& grads) override {
    return {math::zip(grads[0], out_.unpack(name()), [](float g, float y) { return g * Derivative::from_output(y); })};
  }
  const char* name() const noexcept override { return Derivative::name; }
  void release_variables() override { out_.release(); }

 private:
  SavedTensor out_;
};

struct Relu {
  static constexpr const char* name = "ReluBackward";
  static float apply(float x) { return x > 0.0F ? x : 0.0F; }
  static float from_output(float y) { return y > 0.0F ? 1.0F : 0.0F; }
};
struct Sigmoid {
  static constexpr const char* name = "SigmoidBackward";
  static float apply(float x) { return 1.0F / (1.0F + std::exp(-x)); }
  static float from_output(float y) { return y * (1.0F - y); }
};
struct Tanh {
  static constexpr const char* name = "TanhBackward";
  static float apply(float x) { return std::tanh(x); }
  static float from_output(float y) { return 1.0F - y * y; }
};

template <class F>
Tensor pointwise(const char* op, const Tensor& x) {
  detail::check_defined(op, x);
  Tensor out = math::map(x, [](float v) { return F::apply(v); });
  return detail::record<PointwiseBackward<F>>(out, {&x}, out);
}

class ToBackward final : public Node {
 public:
  ToBackward(int device, std::vector<Edge> edges, int source) : Node(device, std::move(edges)), source_(source) {}
  TensorList apply(TensorList&& grads) override {
    const Tensor& g = grads[0];
    return {Tensor::from(g.shape(), std::vector<float>(g.data().begin(), g.data().end()), source_)};
  }
  const char* name() const noexcept override { return "ToBackward"; }

 private:
  int source_;
};

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) {
  detail::check_same("add", a, b);
  return detail::record<AddBackward>(math::zip(a, b, [](float x, float y) { return x + y; }), {&a, &b}, 1.0F);
}

Tensor sub(const Tensor& a, const Tensor& b) {
  detail::check_same("sub", a, b);
  return detail::record<AddBackward>(math::zip(a, b, [](float x, float y) { return x - y; }), {&a, &b}, -1.0F);
}

Tensor mul(const Tensor& a, const Tensor& b) {
  detail::check_same("mul", a, b);
  return detail::record<MulBackward>(math::zip(a, b, [](float x, float y) { return x * y; }), {&a, &b}, a, b);
}

Tensor div(const Tensor& a, const Tensor& b) {
  detail::check_same("div", a, b);
  return detail::record<DivBackward>(math::zip(a, b, [](float x, float y) { return x / y; }), {&a, &b}, a, b);
}

Tensor mul(const Tensor& a, float factor) {
  detail::check_defined("mul", a);
  return detail::record<MulScalarBackward>(math::map(a, [factor](float x) { return x * factor; }), {&a}, factor);
}

Tensor relu(const Tensor& x) { return pointwise<Relu>("relu", x); }
Tensor sigmoid(const Tensor& x) { return pointwise<Sigmoid>("sigmoid", x); }
Tensor tanh(const Tensor& x) { return pointwise<Tanh>("tanh", x); }

Tensor to(const Tensor& x, int device) {
  detail::check_defined("to", x);
  Tensor out = Tensor::from(x.shape(), std::vector<float>(x.data().begin(), x.data().end()), device);
  return detail::record<ToBackward>(out, {&x}, x.device());
}

}  // namespace glassbox::autograd
