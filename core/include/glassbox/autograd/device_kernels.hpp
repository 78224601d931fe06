#pragma once
// The math of tensors that live in device memory, as an interface core can
// call without depending on CUDA. glassbox::cuda implements it
// (glassbox::autograd::use_cuda() installs that implementation).
//
// Until an implementation is installed, a device index is only a scheduling
// domain: tensors on it keep their data in host memory and run the host
// loops, which is how the engine is tested without a GPU. Once installed,
// tensors made on device d >= 0 get device memory on d, and every op on them
// runs through these kernels. Install before making any device tensor:
// installing while a device tensor in host memory is alive throws.
//
// Pointers are device memory of `device` unless named host. Calls are queued
// in order on the device's one stream; only copy_to_host waits. Every call
// may come from any thread (forward ops on the caller's, backward nodes on the
// engine's device worker) and makes `device` current itself.
#include <cstddef>
#include <cstdint>

namespace glassbox::autograd {

/// out[i] = f(x[i]); `alpha` is the factor of scale.
enum class UnaryOp { scale, relu, sigmoid, tanh };

/// out[i] = f(a[i], b[i]). The *_grad ops take (gradient, saved output) and
/// give the gradient times the derivative written in terms of the output.
enum class BinaryOp { add, sub, mul, div, relu_grad, sigmoid_grad, tanh_grad };

/// out[0] = alpha * sum over i of f: a[i] (sum) or (a[i] - b[i])^2 (squared_diff).
enum class ReduceOp { sum, squared_diff };

/// C[m, n] = op(A)[m, k] * op(B)[k, n] for row-major A, B and C, where op
/// transposes when asked; lda and ldb are the row lengths A and B are stored with.
struct GemmArgs {
  const float* a;
  const float* b;
  float* c;
  std::int64_t m, n, k, lda, ldb;
  bool transpose_a, transpose_b;
};

/// Sizes of input [n, c, h, w], weight [k, c, r, s] and output [n, k, oh, ow] (NCHW, KCRS).
struct Conv2dGeometry {
  std::int64_t n, c, h, w;
  std::int64_t k, r, s;
  std::int64_t stride, padding;
  std::int64_t oh, ow;
};

class DeviceKernels {
 public:
  virtual ~DeviceKernels() = default;

  /// "cuda": what error messages name.
  virtual const char* name() const noexcept = 0;
  /// Throws glassbox::Error for a device that does not exist.
  virtual float* allocate(int device, std::size_t numel) = 0;
  /// Returns `p` once the work queued with it has run.
  virtual void release(int device, float* p) noexcept = 0;

  virtual void fill(int device, float* out, std::size_t n, float value) = 0;
  /// out[i] = alpha * s[0], with `s` a one-element tensor of the same device.
  virtual void broadcast(int device, const float* s, float* out, std::size_t n, float alpha) = 0;
  /// `host` may be reused as soon as the call returns.
  virtual void copy_from_host(int device, const float* host, float* out, std::size_t n) = 0;
  /// Waits until `host` holds the values.
  virtual void copy_to_host(int device, const float* in, float* host, std::size_t n) = 0;
  /// Between buffers of one device or of two.
  virtual void copy(int src_device, const float* in, int dst_device, float* out, std::size_t n) = 0;

  virtual void unary(int device, UnaryOp op, const float* x, float* out, std::size_t n, float alpha) = 0;
  /// `out` may be `a` (in place).
  virtual void binary(int device, BinaryOp op, const float* a, const float* b, float* out, std::size_t n) = 0;
  /// `b` is null for sum.
  virtual void reduce(int device, ReduceOp op, const float* a, const float* b, float* out, std::size_t n,
                      float alpha) = 0;

  /// Over the last dimension of [rows, cols].
  virtual void log_softmax(int device, const float* x, float* out, std::size_t rows, std::size_t cols) = 0;
  /// out = g - exp(y) * rowsum(g), from the gradient and the saved output.
  virtual void log_softmax_backward(int device, const float* g, const float* y, float* out, std::size_t rows,
                                    std::size_t cols) = 0;
  /// out[0] = -mean over rows of log_probs[i, targets[i]]; targets are host memory, checked by the caller.
  virtual void nll_loss(int device, const float* log_probs, const std::int64_t* targets, float* out, std::size_t rows,
                        std::size_t cols) = 0;
  /// out = zeros except out[i, targets[i]] = -g[0] / rows.
  virtual void nll_loss_backward(int device, const float* g, const std::int64_t* targets, float* out, std::size_t rows,
                                 std::size_t cols) = 0;

  /// Overwrites args.c.
  virtual void gemm(int device, const GemmArgs& args) = 0;

  /// y = conv(x, w) + bias (bias: k values, or null).
  virtual void conv2d_forward(int device, const Conv2dGeometry& g, const float* x, const float* w, const float* bias,
                              float* y) = 0;
  /// dx from dy and w.
  virtual void conv2d_backward_input(int device, const Conv2dGeometry& g, const float* dy, const float* w,
                                     float* dx) = 0;
  /// dw from x and dy; dbias (k values) too when not null.
  virtual void conv2d_backward_weight(int device, const Conv2dGeometry& g, const float* x, const float* dy, float* dw,
                                      float* dbias) = 0;

  /// Makes `device` current on the calling thread: the engine's worker for
  /// `device` calls it once, so nodes that call the device API directly find
  /// their device current, as PyTorch's device threads do. Must not throw.
  virtual void bind_thread(int device) noexcept = 0;
};

/// Makes `kernels` the process's device kernels, for good. Throws
/// glassbox::Error while device tensors in host memory are alive, or when
/// another implementation is installed already; installing the same one again
/// does nothing.
void install_device_kernels(DeviceKernels& kernels);
/// The installed kernels, or null while tensors on devices stay in host memory.
DeviceKernels* installed_device_kernels() noexcept;

}  // namespace glassbox::autograd
