// An LD_PRELOAD library that counts the CUDA calls a process makes, so that a
// comparison can show what each side pays the driver per call
// (bench/torch/timing.hpp reads the counts through glassbox_cuda_call_counts).
// Each wrapper counts, then calls the next definition (libcudart's). Driver
// calls made through entry points fetched from the runtime
// (cudaGetDriverEntryPointByVersion, as glassbox's CUDA backend makes its
// event and capture calls) pass no runtime wrapper: the fetch is wrapped
// instead, and hands out a counting wrapper of each driver call counted
// here. It links no CUDA library itself: only the declarations are needed.
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <atomic>
#include <cstddef>
#include <cstring>

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

// Driver calls counted when fetched as entry points: name, the type of the
// version fetched, parameters, arguments. Those glassbox's CUDA backend
// fetches (cuda/src/host_allocator/cuda_host_backend.cpp).
#define GLASSBOX_COUNTED_DRIVER_CALLS(X)                                                                             \
  X(cuEventRecord, PFN_cuEventRecord_v2000, (CUevent e, CUstream s), (e, s))                                         \
  X(cuEventQuery, PFN_cuEventQuery_v2000, (CUevent e), (e))                                                          \
  X(cuStreamIsCapturing, PFN_cuStreamIsCapturing_v10000, (CUstream s, CUstreamCaptureStatus * c), (s, c))            \
  X(cuThreadExchangeStreamCaptureMode, PFN_cuThreadExchangeStreamCaptureMode_v10010, (CUstreamCaptureMode * m), (m)) \
  X(cuStreamGetId, PFN_cuStreamGetId_v12000, (CUstream s, unsigned long long* id), (s, id))                          \
  X(cuStreamQuery, PFN_cuStreamQuery_v2000, (CUstream s), (s))

namespace {

enum Call : std::size_t {
#define GLASSBOX_ENUM(name, params, args) k_##name,
  GLASSBOX_COUNTED_CALLS(GLASSBOX_ENUM)
#undef GLASSBOX_ENUM
#define GLASSBOX_DRIVER_ENUM(name, type, params, args) k_##name,
      GLASSBOX_COUNTED_DRIVER_CALLS(GLASSBOX_DRIVER_ENUM)
#undef GLASSBOX_DRIVER_ENUM
          kCalls
};

const char* const kNames[] = {
#define GLASSBOX_NAME(name, params, args) #name,
    GLASSBOX_COUNTED_CALLS(GLASSBOX_NAME)
#undef GLASSBOX_NAME
#define GLASSBOX_DRIVER_NAME(name, type, params, args) #name,
        GLASSBOX_COUNTED_DRIVER_CALLS(GLASSBOX_DRIVER_NAME)
#undef GLASSBOX_DRIVER_NAME
};

// Relaxed: a reader snapshots between its own calls; other threads' calls in
// flight at that moment may or may not be in the snapshot, as with any counter.
std::atomic<unsigned long long> counts[kCalls];

template <class Fn>
Fn* next(const char* name) {
  return reinterpret_cast<Fn*>(dlsym(RTLD_NEXT, name));
}

// Each counted driver call: the entry point the runtime handed out (set
// before the wrapper is handed out), and the wrapper that counts it.
#define GLASSBOX_DRIVER_WRAP(name, type, params, args)        \
  std::atomic<type> real_##name{nullptr};                     \
  CUresult CUDAAPI counted_##name params {                    \
    counts[k_##name].fetch_add(1, std::memory_order_relaxed); \
    return real_##name.load(std::memory_order_relaxed) args;  \
  }
GLASSBOX_COUNTED_DRIVER_CALLS(GLASSBOX_DRIVER_WRAP)
#undef GLASSBOX_DRIVER_WRAP

// The counting wrapper of `symbol`'s entry point `fn`, or `fn` itself when
// it is not counted.
void* counted_entry_point(const char* symbol, void* fn) {
#define GLASSBOX_DRIVER_SWAP(name, type, params, args)                        \
  if (std::strcmp(symbol, #name) == 0) {                                      \
    real_##name.store(reinterpret_cast<type>(fn), std::memory_order_relaxed); \
    return reinterpret_cast<void*>(&counted_##name);                          \
  }
  GLASSBOX_COUNTED_DRIVER_CALLS(GLASSBOX_DRIVER_SWAP)
#undef GLASSBOX_DRIVER_SWAP
  return fn;
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

cudaError_t CUDARTAPI cudaGetDriverEntryPointByVersion(const char* symbol, void** fn, unsigned int version,
                                                       unsigned long long flags,
                                                       cudaDriverEntryPointQueryResult* status) {
  static auto* const real = next<decltype(cudaGetDriverEntryPointByVersion)>("cudaGetDriverEntryPointByVersion");
  const cudaError_t result = real(symbol, fn, version, flags, status);
  if (result == cudaSuccess && fn != nullptr && *fn != nullptr) *fn = counted_entry_point(symbol, *fn);
  return result;
}

}  // extern "C"
