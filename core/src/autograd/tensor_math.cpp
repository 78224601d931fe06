#include "tensor_math.hpp"

#include <cmath>

namespace glassbox::autograd::math {

namespace {

std::size_t count(const Tensor& t) { return static_cast<std::size_t>(t.numel()); }

// The op is picked once, outside the loop, so each loop is a plain one.
template <class F>
void host_map(const float* x, float* out, std::size_t n, F f) {
  for (std::size_t i = 0; i < n; ++i) out[i] = f(x[i]);
}

template <class F>
void host_zip(const float* a, const float* b, float* out, std::size_t n, F f) {
  for (std::size_t i = 0; i < n; ++i) out[i] = f(a[i], b[i]);
}

void host_unary(UnaryOp op, const float* x, float* out, std::size_t n, float alpha) {
  switch (op) {
    case UnaryOp::scale:
      return host_map(x, out, n, [alpha](float v) { return v * alpha; });
    case UnaryOp::relu:
      return host_map(x, out, n, [](float v) { return v > 0.0F ? v : 0.0F; });
    case UnaryOp::sigmoid:
      return host_map(x, out, n, [](float v) { return 1.0F / (1.0F + std::exp(-v)); });
    case UnaryOp::tanh:
      return host_map(x, out, n, [](float v) { return std::tanh(v); });
  }
}

void host_binary(BinaryOp op, const float* a, const float* b, float* out, std::size_t n) {
  switch (op) {
    case BinaryOp::add:
      return host_zip(a, b, out, n, [](float x, float y) { return x + y; });
    case BinaryOp::sub:
      return host_zip(a, b, out, n, [](float x, float y) { return x - y; });
    case BinaryOp::mul:
      return host_zip(a, b, out, n, [](float x, float y) { return x * y; });
    case BinaryOp::div:
      return host_zip(a, b, out, n, [](float x, float y) { return x / y; });
    case BinaryOp::relu_grad:
      return host_zip(a, b, out, n, [](float g, float y) { return y > 0.0F ? g : 0.0F; });
    case BinaryOp::sigmoid_grad:
      return host_zip(a, b, out, n, [](float g, float y) { return g * y * (1.0F - y); });
    case BinaryOp::tanh_grad:
      return host_zip(a, b, out, n, [](float g, float y) { return g * (1.0F - y * y); });
  }
}

double host_reduce(ReduceOp op, const float* a, const float* b, std::size_t n) {
  double s = 0.0;
  if (op == ReduceOp::sum) {
    for (std::size_t i = 0; i < n; ++i) s += a[i];
  } else {
    for (std::size_t i = 0; i < n; ++i) s += static_cast<double>(a[i] - b[i]) * (a[i] - b[i]);
  }
  return s;
}

}  // namespace

DeviceKernels* kernels_for(int device) noexcept { return device == kCpu ? nullptr : installed_device_kernels(); }

DeviceKernels* kernels_of(const Tensor& t) noexcept {
  return t.in_device_memory() ? installed_device_kernels() : nullptr;
}

const float* ptr(const Tensor& t) {
  const Storage& s = *t.impl()->storage;
  return s.device_data != nullptr ? s.device_data : s.host().data();
}

float* mutable_ptr(const Tensor& t) {
  Storage& s = *t.impl()->storage;
  return s.device_data != nullptr ? s.device_data : s.host().data();
}

void unary_in_place(UnaryOp op, const Tensor& x, float alpha) {
  if (DeviceKernels* k = kernels_of(x)) {
    k->unary(x.device(), op, ptr(x), mutable_ptr(x), count(x), alpha);
  } else {
    host_unary(op, ptr(x), mutable_ptr(x), count(x), alpha);
  }
}

Tensor unary(UnaryOp op, const Tensor& x, float alpha) {
  Tensor out = Tensor::empty(x.shape(), x.device());
  if (DeviceKernels* k = kernels_of(x)) {
    k->unary(x.device(), op, ptr(x), mutable_ptr(out), count(x), alpha);
  } else {
    host_unary(op, ptr(x), mutable_ptr(out), count(x), alpha);
  }
  return out;
}

Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b) {
  Tensor out = Tensor::empty(a.shape(), a.device());
  if (DeviceKernels* k = kernels_of(a)) {
    k->binary(a.device(), op, ptr(a), ptr(b), mutable_ptr(out), count(a));
  } else {
    host_binary(op, ptr(a), ptr(b), mutable_ptr(out), count(a));
  }
  return out;
}

void accumulate(const Tensor& a, const Tensor& b) {
  if (DeviceKernels* k = kernels_of(a)) {
    k->binary(a.device(), BinaryOp::add, ptr(a), ptr(b), mutable_ptr(a), count(a));
  } else {
    host_binary(BinaryOp::add, ptr(a), ptr(b), mutable_ptr(a), count(a));
  }
}

Tensor reduce(ReduceOp op, const Tensor& a, const Tensor* b, float alpha) {
  const float* bp = b != nullptr ? ptr(*b) : nullptr;
  if (DeviceKernels* k = kernels_of(a)) {
    Tensor out = Tensor::empty(Shape{}, a.device());
    k->reduce(a.device(), op, ptr(a), bp, mutable_ptr(out), count(a), alpha);
    return out;
  }
  return Tensor::scalar(static_cast<float>(alpha * host_reduce(op, ptr(a), bp, count(a))), a.device());
}

Tensor broadcast(const Tensor& s, float alpha, Shape shape) {
  if (DeviceKernels* k = kernels_of(s)) {
    Tensor out = Tensor::empty(shape, s.device());
    k->broadcast(s.device(), ptr(s), mutable_ptr(out), static_cast<std::size_t>(shape.numel()), alpha);
    return out;
  }
  return Tensor::full(shape, s.item() * alpha, s.device());
}

}  // namespace glassbox::autograd::math
