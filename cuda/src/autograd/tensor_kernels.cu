// The elementwise, reduction and loss kernels of CUDA tensors. Sizes are
// small in this library's tests and demos, so the kernels favour plainness:
// grid-stride elementwise loops, one block per reduction, one thread per row.
#include "tensor_kernels.hpp"

// The kernels' asserts stay in release builds, as PyTorch's device asserts:
// each guards an access that would otherwise land outside its tensor.
#undef NDEBUG
#include <cassert>

namespace glassbox::autograd::cuda_kernels {

namespace {

constexpr int kThreads = 256;
constexpr std::size_t kMaxBlocks = 4096;

unsigned blocks_for(std::size_t n) {
  std::size_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b == 0 ? 1 : (b < kMaxBlocks ? b : kMaxBlocks));
}

// One thread per row: rows never hit the grid's limit of 2^31 - 1 blocks here.
unsigned row_blocks(std::size_t rows) {
  return static_cast<unsigned>(rows == 0 ? 1 : (rows + kThreads - 1) / kThreads);
}

template <class F>
__global__ void map_kernel(const float* x, float* out, std::size_t n, F f) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += std::size_t(blockDim.x) * gridDim.x) {
    out[i] = f(x[i]);
  }
}

template <class F>
__global__ void zip_kernel(const float* a, const float* b, float* out, std::size_t n, F f) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += std::size_t(blockDim.x) * gridDim.x) {
    out[i] = f(a[i], b[i]);
  }
}

template <class F>
void launch_map(const float* x, float* out, std::size_t n, F f, cudaStream_t stream) {
  map_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, out, n, f);
}

template <class F>
void launch_zip(const float* a, const float* b, float* out, std::size_t n, F f, cudaStream_t stream) {
  zip_kernel<<<blocks_for(n), kThreads, 0, stream>>>(a, b, out, n, f);
}

struct Scale {
  float alpha;
  __device__ float operator()(float v) const { return v * alpha; }
};
struct Relu {
  __device__ float operator()(float v) const { return v > 0.0f ? v : 0.0f; }
};
struct Sigmoid {
  __device__ float operator()(float v) const { return 1.0f / (1.0f + expf(-v)); }
};
struct Tanh {
  __device__ float operator()(float v) const { return tanhf(v); }
};
struct Add {
  __device__ float operator()(float x, float y) const { return x + y; }
};
struct Sub {
  __device__ float operator()(float x, float y) const { return x - y; }
};
struct Mul {
  __device__ float operator()(float x, float y) const { return x * y; }
};
struct Div {
  __device__ float operator()(float x, float y) const { return x / y; }
};
struct ReluGrad {
  __device__ float operator()(float g, float y) const { return y > 0.0f ? g : 0.0f; }
};
struct SigmoidGrad {
  __device__ float operator()(float g, float y) const { return g * y * (1.0f - y); }
};
struct TanhGrad {
  __device__ float operator()(float g, float y) const { return g * (1.0f - y * y); }
};

__global__ void fill_kernel(float* out, std::size_t n, float value) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += std::size_t(blockDim.x) * gridDim.x) {
    out[i] = value;
  }
}

__global__ void broadcast_kernel(const float* s, float* out, std::size_t n, float alpha) {
  const float value = s[0] * alpha;
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += std::size_t(blockDim.x) * gridDim.x) {
    out[i] = value;
  }
}

// Sums in double, as the host loops do, so results agree to float rounding.
__device__ double block_sum(double v) {
  __shared__ double partial[kThreads];
  partial[threadIdx.x] = v;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  return partial[0];
}

__global__ void reduce_kernel(ReduceOp op, const float* a, const float* b, float* out, std::size_t n, float alpha) {
  double s = 0.0;
  for (std::size_t i = threadIdx.x; i < n; i += kThreads) {
    double d = op == ReduceOp::sum ? double(a[i]) : double(a[i] - b[i]);
    s += op == ReduceOp::sum ? d : d * d;
  }
  s = block_sum(s);
  if (threadIdx.x == 0) out[0] = float(double(alpha) * s);
}

__global__ void log_softmax_kernel(const float* x, float* out, std::size_t rows, std::size_t cols) {
  std::size_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= rows) return;
  const float* row = x + i * cols;
  float top = row[0];
  for (std::size_t j = 1; j < cols; ++j) top = fmaxf(top, row[j]);
  double s = 0.0;
  for (std::size_t j = 0; j < cols; ++j) s += exp(double(row[j] - top));
  float log_sum = float(log(s)) + top;
  for (std::size_t j = 0; j < cols; ++j) out[i * cols + j] = row[j] - log_sum;
}

__global__ void log_softmax_backward_kernel(const float* g, const float* y, float* out, std::size_t rows,
                                            std::size_t cols) {
  std::size_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= rows) return;
  float gsum = 0.0f;
  for (std::size_t j = 0; j < cols; ++j) gsum += g[i * cols + j];
  for (std::size_t j = 0; j < cols; ++j) out[i * cols + j] = g[i * cols + j] - expf(y[i * cols + j]) * gsum;
}

// nll_loss checked every target on the host before it uploaded them: one out
// of range here was changed on its way to the device. Stop with a device-side
// assert (cudaErrorAssert, and the driver prints this line) instead of
// reading or writing outside the row.
__device__ std::size_t checked_target(std::int64_t t, std::size_t cols) {
  assert(t >= 0 && static_cast<std::size_t>(t) < cols && "target changed after the host checked it");
  return static_cast<std::size_t>(t);
}

__global__ void nll_loss_kernel(const float* lp, const std::int64_t* targets, float* out, std::size_t rows,
                                std::size_t cols) {
  double s = 0.0;
  for (std::size_t i = threadIdx.x; i < rows; i += kThreads) s -= lp[i * cols + checked_target(targets[i], cols)];
  s = block_sum(s);
  if (threadIdx.x == 0) out[0] = float(s / double(rows));
}

__global__ void nll_loss_scatter_kernel(const float* g, const std::int64_t* targets, float* out, std::size_t rows,
                                        std::size_t cols) {
  std::size_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < rows) out[i * cols + checked_target(targets[i], cols)] = -g[0] / float(rows);
}

}  // namespace

void fill(float* out, std::size_t n, float value, cudaStream_t stream) {
  fill_kernel<<<blocks_for(n), kThreads, 0, stream>>>(out, n, value);
}

void broadcast(const float* s, float* out, std::size_t n, float alpha, cudaStream_t stream) {
  broadcast_kernel<<<blocks_for(n), kThreads, 0, stream>>>(s, out, n, alpha);
}

void unary(UnaryOp op, const float* x, float* out, std::size_t n, float alpha, cudaStream_t stream) {
  switch (op) {
    case UnaryOp::scale:
      return launch_map(x, out, n, Scale{alpha}, stream);
    case UnaryOp::relu:
      return launch_map(x, out, n, Relu{}, stream);
    case UnaryOp::sigmoid:
      return launch_map(x, out, n, Sigmoid{}, stream);
    case UnaryOp::tanh:
      return launch_map(x, out, n, Tanh{}, stream);
  }
}

void binary(BinaryOp op, const float* a, const float* b, float* out, std::size_t n, cudaStream_t stream) {
  switch (op) {
    case BinaryOp::add:
      return launch_zip(a, b, out, n, Add{}, stream);
    case BinaryOp::sub:
      return launch_zip(a, b, out, n, Sub{}, stream);
    case BinaryOp::mul:
      return launch_zip(a, b, out, n, Mul{}, stream);
    case BinaryOp::div:
      return launch_zip(a, b, out, n, Div{}, stream);
    case BinaryOp::relu_grad:
      return launch_zip(a, b, out, n, ReluGrad{}, stream);
    case BinaryOp::sigmoid_grad:
      return launch_zip(a, b, out, n, SigmoidGrad{}, stream);
    case BinaryOp::tanh_grad:
      return launch_zip(a, b, out, n, TanhGrad{}, stream);
  }
}

void reduce(ReduceOp op, const float* a, const float* b, float* out, std::size_t n, float alpha, cudaStream_t stream) {
  reduce_kernel<<<1, kThreads, 0, stream>>>(op, a, b, out, n, alpha);
}

void log_softmax(const float* x, float* out, std::size_t rows, std::size_t cols, cudaStream_t stream) {
  log_softmax_kernel<<<row_blocks(rows), kThreads, 0, stream>>>(x, out, rows, cols);
}

void log_softmax_backward(const float* g, const float* y, float* out, std::size_t rows, std::size_t cols,
                          cudaStream_t stream) {
  log_softmax_backward_kernel<<<row_blocks(rows), kThreads, 0, stream>>>(g, y, out, rows, cols);
}

void nll_loss(const float* log_probs, const std::int64_t* targets, float* out, std::size_t rows, std::size_t cols,
              cudaStream_t stream) {
  nll_loss_kernel<<<1, kThreads, 0, stream>>>(log_probs, targets, out, rows, cols);
}

void nll_loss_scatter(const float* g, const std::int64_t* targets, float* out, std::size_t rows, std::size_t cols,
                      cudaStream_t stream) {
  nll_loss_scatter_kernel<<<row_blocks(rows), kThreads, 0, stream>>>(g, targets, out, rows, cols);
}

}  // namespace glassbox::autograd::cuda_kernels
