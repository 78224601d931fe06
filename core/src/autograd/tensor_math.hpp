#pragma once
// Elementwise math and reductions over tensors, recording no graph: what
// forward ops and backward formulas are built from. Each runs the host loop
// for host memory and the installed DeviceKernels for device memory, so an
// op's code is one for both.
#include <cstddef>

#include "glassbox/autograd/device_kernels.hpp"
#include "glassbox/autograd/tensor.hpp"

namespace glassbox::autograd::math {

/// The kernels that own tensors made on `device`: null for host memory.
DeviceKernels* kernels_for(int device) noexcept;
/// The kernels that hold `t`'s data: null when it is in host memory.
DeviceKernels* kernels_of(const Tensor& t) noexcept;
/// Where `t`'s data is, host or device.
const float* ptr(const Tensor& t);
float* mutable_ptr(const Tensor& t);

/// A fresh tensor with out[i] = op(x[i]) (alpha: the scale factor).
Tensor unary(UnaryOp op, const Tensor& x, float alpha = 0.0F);
/// x[i] = op(x[i]) without touching the version counter.
void unary_in_place(UnaryOp op, const Tensor& x, float alpha = 0.0F);
/// A fresh tensor with out[i] = op(a[i], b[i]); the caller checked the shapes and devices.
Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b);
/// a += b element by element, without touching the version counter: for
/// gradient buffers no one else can see.
void accumulate(const Tensor& a, const Tensor& b);
/// A 0-d tensor alpha * sum of a (sum) or of (a - b)^2 (squared_diff).
Tensor reduce(ReduceOp op, const Tensor& a, const Tensor* b, float alpha);
/// A tensor of `shape` on `s`'s device, every element alpha * s (a one-element tensor).
Tensor broadcast(const Tensor& s, float alpha, Shape shape);

/// Whether `t` and its data are referenced only by the caller's handle.
inline bool exclusively_owned(const Tensor& t) {
  return t.impl_ptr().use_count() == 1 && t.impl()->storage.use_count() == 1;
}

}  // namespace glassbox::autograd::math
