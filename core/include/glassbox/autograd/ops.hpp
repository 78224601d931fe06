#pragma once
// Differentiable CPU ops on Tensor. Each records a backward node when grad
// mode is on and an input requires grad. Elementwise binary ops need equal
// shapes and devices (no broadcasting); a mismatch throws glassbox::Error
// naming the op, the shapes and the devices.
#include <cstdint>
#include <vector>

#include "glassbox/autograd/tensor.hpp"

namespace glassbox::autograd {

Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, float factor);

/// Sum / mean of every element: a 0-d tensor.
Tensor sum(const Tensor& x);
Tensor mean(const Tensor& x);

Tensor relu(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor tanh(const Tensor& x);

/// [m, k] x [k, n] -> [m, n].
Tensor matmul(const Tensor& a, const Tensor& b);

/// Mean of squared differences: a 0-d tensor.
Tensor mse_loss(const Tensor& input, const Tensor& target);
/// Over the last dimension of an [n, c] tensor.
Tensor log_softmax(const Tensor& x);
/// Mean of -log_probs[i, targets[i]] over the n rows of an [n, c] tensor.
Tensor nll_loss(const Tensor& log_probs, const std::vector<std::int64_t>& targets);
/// nll_loss(log_softmax(logits), targets).
Tensor cross_entropy(const Tensor& logits, const std::vector<std::int64_t>& targets);

/// 2-d cross-correlation of input [n, c, h, w] with weight [k, c, r, s], plus
/// bias [k] when defined: output [n, k, (h + 2p - r) / stride + 1,
/// (w + 2p - s) / stride + 1], zero padding. Bad shapes, stride < 1,
/// padding < 0 or mixed devices throw glassbox::Error naming every shape.
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, int stride = 1, int padding = 0);

/// The same data under `shape` (same element count), sharing storage and
/// version counter with x, as a view does.
Tensor reshape(const Tensor& x, Shape shape);
/// [n, ...] -> [n, numel / n].
Tensor flatten(const Tensor& x);

/// A copy on `device`; its gradient goes back to the source device.
Tensor to(const Tensor& x, int device);

inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
inline Tensor operator*(const Tensor& a, float factor) { return mul(a, factor); }

}  // namespace glassbox::autograd
