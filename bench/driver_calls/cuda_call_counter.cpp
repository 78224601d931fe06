// An LD_PRELOAD library that counts the CUDA runtime calls a process makes,
// so that a comparison can show what each side pays the driver per call
// (bench/torch/timing.hpp reads the counts through glassbox_cuda_call_counts).
// Each wrapper counts, then calls the next definition (libcudart's). It links
// no CUDA library itself: only the runtime's declarations are needed.
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <atomic>
#include <cstddef>

// The calls counted: those either allocator's paths make (events, capture
// mode, host memory, device selection, synchronisation).
#define GLASSBOX_COUNTED_CALLS(X)                                                         \
  X(cudaEventRecord, (cudaEvent_t e, cudaStream_t s), (e, s))                             \
  X(cudaEventRecordWithFlags, (cudaEvent_t e, cudaStream_t s, unsigned int f), (e, s, f)) \
  X(cudaEventQuery, (cudaEvent_t e), (e))                                                 \
  X(cudaEventSynchronize, (cudaEvent_t e), (e))                                           \
  X(cudaEventCreate, (cudaEvent_t * e), (e))                                              \
  X(cudaEventCreateWithFlags, (cudaEvent_t * e, unsigned int f), (e, f))                  \
  X(cudaEventDestroy, (cudaEvent_t e), (e))                                               \
  X(cudaStreamIsCapturing, (cudaStream_t s, cudaStreamCaptureStatus * c), (s, c))         \
  X(cudaThreadExchangeStreamCaptureMode, (cudaStreamCaptureMode * m), (m))                \
  X(cudaStreamQuery, (cudaStream_t s), (s))                                               \
  X(cudaStreamSynchronize, (cudaStream_t s), (s))                                         \
  X(cudaStreamWaitEvent, (cudaStream_t s, cudaEvent_t e, unsigned int f), (s, e, f))      \
  X(cudaGetDevice, (int* d), (d))                                                         \
  X(cudaSetDevice, (int d), (d))                                                          \
  X(cudaHostAlloc, (void** p, size_t n, unsigned int f), (p, n, f))                       \
  X(cudaMallocHost, (void** p, size_t n), (p, n))                                         \
  X(cudaFreeHost, (void* p), (p))                                                         \
  X(cudaHostRegister, (void* p, size_t n, unsigned int f), (p, n, f))                     \
  X(cudaHostUnregister, (void* p), (p))                                                   \
  X(cudaHostGetDevicePointer, (void** d, void* p, unsigned int f), (d, p, f))             \
  X(cudaPointerGetAttributes, (cudaPointerAttributes * a, const void* p), (a, p))         \
  X(cudaGetLastError, (), ())                                                             \
  X(cudaPeekAtLastError, (), ())

namespace {

enum Call : std::size_t {
#define GLASSBOX_ENUM(name, params, args) k_##name,
  GLASSBOX_COUNTED_CALLS(GLASSBOX_ENUM)
#undef GLASSBOX_ENUM
      kCalls
};

const char* const kNames[] = {
#define GLASSBOX_NAME(name, params, args) #name,
    GLASSBOX_COUNTED_CALLS(GLASSBOX_NAME)
#undef GLASSBOX_NAME
};

// Relaxed: a reader snapshots between its own calls; other threads' calls in
// flight at that moment may or may not be in the snapshot, as with any counter.
std::atomic<unsigned long long> counts[kCalls];

template <class Fn>
Fn* next(const char* name) {
  return reinterpret_cast<Fn*>(dlsym(RTLD_NEXT, name));
}

}  // namespace

extern "C" {

/// The counted calls' names and counts so far, `kCalls` of each. The counts
/// are atomics laid out as plain 64-bit integers; read them with relaxed loads.
std::size_t glassbox_cuda_call_counts(const char* const** names, const std::atomic<unsigned long long>** values) {
  *names = kNames;
  *values = counts;
  return kCalls;
}

#define GLASSBOX_WRAP(name, params, args)                     \
  cudaError_t CUDARTAPI name params {                         \
    static auto* const real = next<decltype(name)>(#name);    \
    counts[k_##name].fetch_add(1, std::memory_order_relaxed); \
    return real args;                                         \
  }
GLASSBOX_COUNTED_CALLS(GLASSBOX_WRAP)
#undef GLASSBOX_WRAP

}  // extern "C"
