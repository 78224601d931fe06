#pragma once
// The CUDA backends as the typed suites (tests/typed) see them: the same
// members as sim_backend_traits.hpp, on device 0. For tests/gpu only (it
// needs the kernels of tests/gpu/test_kernels.cu).
//
// A gate is a one-thread kernel spinning on a flag in mapped pinned memory
// until the host sets it (tests/gpu/test_kernels.cu: wait_until_open), so a
// stream is held at an exact point of its order for as long as the test
// likes. It gives up after 20 s of GPU time and the test fails.
//
// While a gate is closed, nothing may synchronise the whole device: cudaFree
// and cudaFreeHost wait for every stream, the held one included, and would
// sit out the gate's time limit (checked on an H100: cudaHostAlloc,
// cudaMalloc, cudaMallocAsync, cudaFreeAsync, event creation, records and
// queries, stream creation and destruction, cudaStreamIsCapturing, relaxed
// capture and cudaLaunchHostFunc on other streams do not wait). So the
// flags and scratch memory the gates and reads use are made once and never
// freed, and a typed test opens its gates before anything returns pinned
// memory (empty_cache, the cached-bytes cap, the allocator's destructor).
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "glassbox/cuda/cuda_check.hpp"
#include "glassbox/cuda/cudnn/cuda_cudnn_backend.hpp"
#include "glassbox/cuda/current_stream.hpp"
#include "glassbox/cuda/host_allocator/cuda_host_backend.hpp"
#include "glassbox/cuda/stream_pool.hpp"
#include "glassbox/host_allocator/caching_host_allocator.hpp"
#include "glassbox/metrics/registry.hpp"
#include "gpu_required.hpp"
#include "test_kernels.hpp"

namespace glassbox::testing {

/// Why the CUDA backends cannot run here (no device); empty when they can.
/// Makes device 0 current for the calling thread when they can. Where a GPU
/// is required (gpu_required.hpp), no device also fails the calling test.
inline std::string cuda_unavailable() {
  if (lacks_devices()) return "no CUDA device";
  cuda::check_cuda(cudaSetDevice(0), "cudaSetDevice");
  return {};
}

/// Gate flags and read scratch, made on first use (before any gate can be
/// closed) and kept for the life of the process.
class CudaTestArena {
 public:
  static constexpr std::size_t kGates = 1024;
  static constexpr std::size_t kReads = 16;
  static constexpr std::size_t kReadBytes = std::size_t{1} << 16;

  struct GateFlags {
    unsigned open;
    unsigned timed_out;
  };

  static CudaTestArena& get() {
    static auto* arena = new CudaTestArena;
    return *arena;
  }

  /// Flags for the next gate, reset. A slot comes round again only after
  /// kGates more gates, each of which waited for its kernel to end.
  GateFlags* take_gate() {
    GateFlags* f = &gates_[next_gate_.fetch_add(1) % kGates];
    f->open = 0;
    f->timed_out = 0;
    return f;
  }
  /// Device memory for one read of at most kReadBytes.
  unsigned char* take_read() { return scratch_ + (next_read_.fetch_add(1) % kReads) * kReadBytes; }

 private:
  CudaTestArena() {
    void* flags = nullptr;
    cuda::check_cuda(cudaHostAlloc(&flags, kGates * sizeof(GateFlags), cudaHostAllocMapped), "cudaHostAlloc (gates)");
    gates_ = static_cast<GateFlags*>(flags);
    void* scratch = nullptr;
    cuda::check_cuda(cudaMalloc(&scratch, kReads * kReadBytes), "cudaMalloc (reads)");
    scratch_ = static_cast<unsigned char*>(scratch);
  }
  GateFlags* gates_ = nullptr;
  unsigned char* scratch_ = nullptr;
  std::atomic<std::size_t> next_gate_{0};
  std::atomic<std::size_t> next_read_{0};
};

/// Holds `stream` where it is queued: work queued after it waits until
/// open() (or the destructor).
class CudaGate {
 public:
  explicit CudaGate(cudaStream_t stream) : flags_(CudaTestArena::get().take_gate()) {
    unsigned* open = nullptr;
    unsigned* timed_out = nullptr;
    cuda::check_cuda(cudaHostGetDevicePointer(reinterpret_cast<void**>(&open), &flags_->open, 0),
                     "cudaHostGetDevicePointer (gate)");
    cuda::check_cuda(cudaHostGetDevicePointer(reinterpret_cast<void**>(&timed_out), &flags_->timed_out, 0),
                     "cudaHostGetDevicePointer (gate)");
    wait_until_open(open, timed_out, kLimitNs, stream);
    cuda::check_cuda(cudaGetLastError(), "wait_until_open launch");
    cuda::check_cuda(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming), "cudaEventCreateWithFlags (gate)");
    cuda::check_cuda(cudaEventRecord(done_, stream), "cudaEventRecord (gate)");
  }
  ~CudaGate() {
    open();
    cudaEventDestroy(done_);
  }
  CudaGate(const CudaGate&) = delete;
  CudaGate& operator=(const CudaGate&) = delete;

  /// Lets the stream go on; returns once the gate's kernel has ended (the
  /// work queued behind it may still be running).
  void open() {
    if (opened_) return;
    opened_ = true;
    std::atomic_ref<unsigned>(flags_->open).store(1, std::memory_order_release);
    cuda::check_cuda(cudaEventSynchronize(done_), "cudaEventSynchronize (gate)");
    if (std::atomic_ref<unsigned>(flags_->timed_out).load(std::memory_order_acquire) != 0)
      ADD_FAILURE() << "a gate was held past its time limit";
  }

 private:
  static constexpr unsigned long long kLimitNs = 20'000'000'000ULL;
  CudaTestArena::GateFlags* flags_;
  cudaEvent_t done_ = nullptr;
  bool opened_ = false;
};

/// A non-blocking stream on `device` that the test owns, or one it borrows.
class CudaTestStream {
 public:
  explicit CudaTestStream(int device = 0) {
    cuda::DeviceGuard guard(device);
    cuda::check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  }
  struct Borrowed {
    cudaStream_t stream;
  };
  /// Not destroyed at the end (a glassbox pool stream).
  explicit CudaTestStream(Borrowed b) : stream_(b.stream), owned_(false) {}
  ~CudaTestStream() {
    if (owned_) cudaStreamDestroy(stream_);
  }
  CudaTestStream(const CudaTestStream&) = delete;
  CudaTestStream& operator=(const CudaTestStream&) = delete;
  cudaStream_t native() const noexcept { return stream_; }
  void synchronize() { cuda::check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }

 private:
  cudaStream_t stream_ = nullptr;
  bool owned_ = true;
};

/// Queues `task` on `stream` (cudaLaunchHostFunc): it runs on a driver
/// thread once the stream gets there. It must not call CUDA.
inline void cuda_host_task(cudaStream_t stream, std::function<void()> task) {
  auto* owned = new std::function<void()>(std::move(task));
  cudaError_t e = cudaLaunchHostFunc(
      stream,
      [](void* p) {
        std::unique_ptr<std::function<void()>> f(static_cast<std::function<void()>*>(p));
        (*f)();
      },
      owned);
  if (e != cudaSuccess) delete owned;
  cuda::check_cuda(e, "cudaLaunchHostFunc");
}

/// The caching host allocator on CudaHostBackend.
struct CudaHostTraits {
  using Backend = cuda::CudaHostBackend;
  using Gate = CudaGate;

  static std::string unavailable() {
    std::string why = cuda_unavailable();
    if (why.empty()) CudaTestArena::get();
    return why;
  }
  static std::shared_ptr<Backend> make_backend(const host_allocator::HostAllocatorConfig& c) {
    return std::make_shared<Backend>(c.use_host_register, c.register_threads);
  }

  class Stream : public CudaTestStream {
   public:
    Stream() = default;
    /// One of glassbox's pool streams on device 0, which every CudaHostBackend
    /// knows outlives it.
    explicit Stream(Backend&) : CudaTestStream(Borrowed{cuda::stream_from_pool(0)}) {}
    host_allocator::StreamId id() const noexcept { return Backend::id(native()); }
  };

  static cuda::StreamGuard make_current(Stream& s) noexcept { return cuda::StreamGuard(s.native()); }
  /// Relaxed mode: the allocator allocates (cudaHostAlloc) during capture.
  static void begin_capture(Stream& s) {
    cuda::check_cuda(cudaStreamBeginCapture(s.native(), cudaStreamCaptureModeRelaxed), "cudaStreamBeginCapture");
  }
  /// Ends the capture; a graph with work in it is launched once and waited
  /// for (its copies read their blocks again), then destroyed.
  static void end_capture(Stream& s) {
    cudaGraph_t graph = nullptr;
    cuda::check_cuda(cudaStreamEndCapture(s.native(), &graph), "cudaStreamEndCapture");
    std::size_t nodes = 0;
    cuda::check_cuda(cudaGraphGetNodes(graph, nullptr, &nodes), "cudaGraphGetNodes");
    if (nodes > 0) {
      cudaGraphExec_t exec = nullptr;
      cuda::check_cuda(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate");
      cuda::check_cuda(cudaGraphLaunch(exec, s.native()), "cudaGraphLaunch");
      s.synchronize();
      cudaGraphExecDestroy(exec);
    }
    cudaGraphDestroy(graph);
  }
  /// A captured copy of the `bytes` at `ptr` to device scratch.
  static void read_during_capture(Stream& s, const void* ptr, std::size_t bytes) {
    cuda::check_cuda(cudaMemcpyAsync(CudaTestArena::get().take_read(), ptr, bytes, cudaMemcpyHostToDevice, s.native()),
                     "cudaMemcpyAsync (captured)");
  }
  /// Queues `task` on `s` (cudaLaunchHostFunc): it runs on a driver thread in
  /// the stream's order, after any gate queued before it, and reads pinned
  /// memory on the host. It must not call CUDA.
  static void host_task(Stream& s, std::function<void()> task) { cuda_host_task(s.native(), std::move(task)); }

  /// A copy of the `bytes` at `ptr` (pinned) to device scratch, by the copy
  /// engine when the stream gets there, read back by bytes().
  class Read {
   public:
    Read(Stream& s, const void* ptr, std::size_t bytes)
        : stream_(s), device_(CudaTestArena::get().take_read()), bytes_(bytes) {
      if (bytes > CudaTestArena::kReadBytes) throw std::length_error("CudaHostTraits::Read: too many bytes");
      cuda::check_cuda(cudaMemcpyAsync(device_, ptr, bytes, cudaMemcpyHostToDevice, s.native()), "cudaMemcpyAsync H2D");
    }
    std::vector<unsigned char> bytes() {
      std::vector<unsigned char> out(bytes_);
      cuda::check_cuda(cudaMemcpyAsync(out.data(), device_, bytes_, cudaMemcpyDeviceToHost, stream_.native()),
                       "cudaMemcpyAsync D2H");
      stream_.synchronize();
      return out;
    }

   private:
    Stream& stream_;
    unsigned char* device_;
    std::size_t bytes_;
  };

  /// The CUDA backend counts none of these (its events_created() counts a
  /// pool's events, not live ones): the suites use the allocator's stats.
  static std::optional<std::size_t> live_events(const Backend&) { return std::nullopt; }
  static std::optional<std::size_t> live_blocks(const Backend&) { return std::nullopt; }
  static std::optional<std::size_t> allocations_made(const Backend&) { return std::nullopt; }
};

/// The cuDNN state wrapper on CudaCudnnBackend (device 0 here).
struct CudaCudnnTraits {
  using Backend = cudnn::CudaCudnnBackend;
  using Stream = CudaTestStream;
  using Gate = CudaGate;

  static std::string unavailable() {
    std::string why = cuda_unavailable();
    if (why.empty()) CudaTestArena::get();
    return why;
  }
  static Backend make_backend(metrics::Registry&) { return Backend{}; }
  static void host_task(cudaStream_t stream, std::function<void()> task) { cuda_host_task(stream, std::move(task)); }
  static void synchronize(cudaStream_t stream) {
    cuda::check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  }
  static std::optional<std::size_t> live_state_streams(const Backend&) { return std::nullopt; }
};

}  // namespace glassbox::testing
