#pragma once
// glassbox's pool of CUDA streams, as PyTorch's getStreamFromPool(): a fixed
// set of non-blocking streams per device, made at the device's first request
// and handed out round robin. Pool streams are never destroyed, so the host
// allocator knows, without a promise from the caller, that one outlives it
// (StreamLife::outlives_allocator): blocks used on a pool stream share one
// event recorded later, where blocks used on a caller's own stream, which may
// be destroyed right after free(), cost an event record at each free.
//
// Thread-safety: every function may be called from any thread.
#include <cuda_runtime_api.h>

namespace glassbox::cuda {

/// Streams per device in the pool (PyTorch's pools hold as many per priority).
inline constexpr int kPoolStreamsPerDevice = 32;

/// The next of `device`'s pool streams, round robin. The first request for
/// a device makes its streams (BackendError if CUDA cannot); a device that
/// does not exist is a UsageError that names it and the devices there are.
cudaStream_t stream_from_pool(int device);

/// The next pool stream of the calling thread's current device.
cudaStream_t stream_from_pool();

/// Whether `stream` is one of the pool's streams. Lock-free, no CUDA call:
/// the host allocator asks at every record_stream() without a promise.
bool is_pool_stream(cudaStream_t stream) noexcept;

}  // namespace glassbox::cuda
