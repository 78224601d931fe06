#pragma once
// The calling thread's cuBLAS, cuBLASLt and cuDNN handles, from process-wide
// pools that live until the process ends (like PyTorch's: handles are never
// destroyed during exit, when the CUDA context may already be gone).
//
// current_cublas_handle() also binds the handle to `stream` and gives it a
// workspace of its own for that stream (size from CUBLAS_WORKSPACE_CONFIG,
// default 32 MiB), as PyTorch does; a thread that keeps using one stream pays
// for neither again. Do not call cublasSetStream on these handles yourself.
// The overloads without arguments find the device and stream themselves: the
// thread's current device and its current stream there (current_stream.hpp),
// the job PyTorch's getCurrentCUDABlasHandle() does. On a thread with no
// current context, the first call makes the current device's primary context
// current (as PyTorch's getters do; cuBLAS and cuDNN want one).
#include "glassbox/cuda/handle_pool/cuda_handle_factories.hpp"
#include "glassbox/handle_pool/device_thread_handle_pool.hpp"
#include "glassbox/handle_pool/workspace_table.hpp"

namespace glassbox::handle_pool {

using CublasPool = DeviceThreadHandlePool<cuda::CublasFactory>;
using CublasLtPool = DeviceThreadHandlePool<cuda::CublasLtFactory>;
using CudnnPool = DeviceThreadHandlePool<cuda::CudnnFactory>;

CublasPool& cublas_pool();
CublasLtPool& cublaslt_pool();
CudnnPool& cudnn_pool();

cublasHandle_t current_cublas_handle(int device, cudaStream_t stream);
cublasHandle_t current_cublas_handle();
cublasLtHandle_t current_cublaslt_handle(int device);
cudnnHandle_t current_cudnn_handle(int device, cudaStream_t stream);
cudnnHandle_t current_cudnn_handle();

/// Bytes of the per-(handle, stream) cuBLAS workspace: CUBLAS_WORKSPACE_CONFIG
/// (":KiB:count" pairs, summed) or 32 MiB. A malformed value throws ConfigError.
std::size_t cublas_workspace_bytes();

/// Frees the cuBLAS workspaces no thread can be using: those of handles since
/// bound to another stream, and of handles back in the pool (their thread
/// exited). Safe while other threads get and use handles; a thread's next
/// call on a stream whose workspace went makes it a new one. Waits for the
/// device (cudaFree). Returns the bytes freed; glassbox_handle_workspace_bytes
/// {library="cublas"} shows what is held.
std::size_t release_idle_cublas_workspaces();
/// Bytes of cuBLAS workspace held now on `device`.
std::size_t cublas_workspaces_held(int device);

}  // namespace glassbox::handle_pool
