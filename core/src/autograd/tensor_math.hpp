#pragma once
// Plain elementwise loops over tensor data, recording no graph: what forward
// ops and backward formulas are built from.
#include <cstddef>

#include "glassbox/autograd/tensor.hpp"

namespace glassbox::autograd::math {

/// A fresh tensor of `like`'s shape and device with out[i] = f(x[i]).
template <class F>
Tensor map(const Tensor& x, F f) {
  Tensor out = Tensor::zeros(x.shape(), x.device());
  std::span<const float> in = x.data();
  std::span<float> o = out.mutable_data();
  for (std::size_t i = 0; i < o.size(); ++i) o[i] = f(in[i]);
  return out;
}

/// out[i] = f(a[i], b[i]); the caller checked that the shapes match.
template <class F>
Tensor zip(const Tensor& a, const Tensor& b, F f) {
  Tensor out = Tensor::zeros(a.shape(), a.device());
  std::span<const float> x = a.data();
  std::span<const float> y = b.data();
  std::span<float> o = out.mutable_data();
  for (std::size_t i = 0; i < o.size(); ++i) o[i] = f(x[i], y[i]);
  return out;
}

/// a += b element by element, without touching the version counter: for
/// gradient buffers no one else can see.
inline void accumulate(const Tensor& a, const Tensor& b) {
  std::span<float> x = a.mutable_data();
  std::span<const float> y = b.data();
  for (std::size_t i = 0; i < x.size(); ++i) x[i] += y[i];
}

/// Whether `t` and its data are referenced only by the caller's handle.
inline bool exclusively_owned(const Tensor& t) {
  return t.impl_ptr().use_count() == 1 && t.impl()->storage.use_count() == 1;
}

}  // namespace glassbox::autograd::math
