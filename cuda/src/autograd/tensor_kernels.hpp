#pragma once
// Launchers of the CUDA kernels behind CudaDeviceKernels: each queues one
// kernel on `stream` (of the current device) and returns at once.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "glassbox/autograd/device_kernels.hpp"

namespace glassbox::autograd::cuda_kernels {

void fill(float* out, std::size_t n, float value, cudaStream_t stream);
void broadcast(const float* s, float* out, std::size_t n, float alpha, cudaStream_t stream);
void unary(UnaryOp op, const float* x, float* out, std::size_t n, float alpha, cudaStream_t stream);
void binary(BinaryOp op, const float* a, const float* b, float* out, std::size_t n, cudaStream_t stream);
void reduce(ReduceOp op, const float* a, const float* b, float* out, std::size_t n, float alpha, cudaStream_t stream);
void log_softmax(const float* x, float* out, std::size_t rows, std::size_t cols, cudaStream_t stream);
void log_softmax_backward(const float* g, const float* y, float* out, std::size_t rows, std::size_t cols,
                          cudaStream_t stream);
/// `targets`: device memory, rows values.
void nll_loss(const float* log_probs, const std::int64_t* targets, float* out, std::size_t rows, std::size_t cols,
              cudaStream_t stream);
/// Writes only out[i, targets[i]]: the caller zeroed `out`.
void nll_loss_scatter(const float* g, const std::int64_t* targets, float* out, std::size_t rows, std::size_t cols,
                      cudaStream_t stream);

}  // namespace glassbox::autograd::cuda_kernels
