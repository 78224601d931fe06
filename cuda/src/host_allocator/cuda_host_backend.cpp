#include "glassbox/cuda/host_allocator/cuda_host_backend.hpp"

#include <cudaTypedefs.h>
#include <unistd.h>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <unordered_map>
#include <utility>

#include "glassbox/cuda/cuda_check.hpp"
#include "glassbox/cuda/current_stream.hpp"
#include "glassbox/cuda/stream_pool.hpp"
#include "glassbox/error.hpp"
#include "nvtx_mem_regions.hpp"

namespace glassbox::cuda {

namespace {
std::uint64_t next_backend_serial() {
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

// The live backends by serial, for spare events whose thread outlives their
// use. Never destroyed: threads may exit after static destruction.
struct LiveBackends {
  std::mutex mu;
  std::unordered_map<std::uint64_t, CudaHostBackend*> by_serial;
};
LiveBackends& live_backends() {
  static auto* live = new LiveBackends;
  return *live;
}

// Below this, touching pages in parallel costs more than it saves.
constexpr std::size_t kParallelTouchBytes = std::size_t{16} << 20;

// First touch maps the pages; spreading it over threads spreads the faults.
void touch_pages(char* p, std::size_t bytes, int threads) {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  std::size_t chunk = (bytes / static_cast<std::size_t>(threads) + page - 1) / page * page;
  std::vector<std::thread> workers;
  for (std::size_t start = 0; start < bytes; start += chunk) {
    workers.emplace_back([=] {
      for (std::size_t o = start; o < std::min(bytes, start + chunk); o += page) p[o] = 0;
    });
  }
  for (auto& w : workers) w.join();
}

// With one device every stream is on it: no driver call per recorded event.
int stream_device(cudaStream_t s) {
  if (cuda_device_count() == 1) return 0;
  int device = 0;
  check_cuda(cudaStreamGetDevice(s, &device), "cudaStreamGetDevice");
  return device;
}

bool out_of_memory(cudaError_t e) {
  if (e != cudaErrorMemoryAllocation) return false;
  (void)cudaGetLastError();  // clear it: the allocator retries after freeing cache
  return true;
}

// The driver's entry points for the calls on the record path. Through the
// runtime each costs some 50 ns more (measured on an H100 host: a
// capture-mode exchange pair 105-150 ns against 15-22 ns, a stream's capture
// status 68-88 ns against 17-19 ns, an event record and query 428-862 ns
// against 343-403 ns), and the capture rules add two calls to a path of some
// 1 µs. Where a driver call fails, the runtime's is made instead: it makes
// the thread's context current first (a thread's first call may come from
// here), and it names the error. Fetched through the runtime, so that nothing
// links libcuda, which a machine without a driver lacks; null where the
// driver has none.
struct DriverCalls {
  PFN_cuThreadExchangeStreamCaptureMode_v10010 exchange_capture_mode = nullptr;
  PFN_cuStreamIsCapturing_v10000 stream_is_capturing = nullptr;
  PFN_cuEventRecord_v2000 event_record = nullptr;
  PFN_cuEventQuery_v2000 event_query = nullptr;
  PFN_cuStreamGetId_v12000 stream_get_id = nullptr;
  PFN_cuStreamQuery_v2000 stream_query = nullptr;
};

template <class Fn>
Fn entry_point(const char* symbol, unsigned version) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  if (cudaGetDriverEntryPointByVersion(symbol, &fn, version, cudaEnableDefault, &found) != cudaSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  return found == cudaDriverEntryPointSuccess ? reinterpret_cast<Fn>(fn) : nullptr;
}

const DriverCalls& driver() {
  static const DriverCalls calls{
      entry_point<PFN_cuThreadExchangeStreamCaptureMode_v10010>("cuThreadExchangeStreamCaptureMode", 10010),
      entry_point<PFN_cuStreamIsCapturing_v10000>("cuStreamIsCapturing", 10000),
      entry_point<PFN_cuEventRecord_v2000>("cuEventRecord", 2000),
      entry_point<PFN_cuEventQuery_v2000>("cuEventQuery", 2000),
      entry_point<PFN_cuStreamGetId_v12000>("cuStreamGetId", 12000),
      entry_point<PFN_cuStreamQuery_v2000>("cuStreamQuery", 2000),
  };
  return calls;
}

// Puts the calling thread in relaxed capture mode for a scope. While a
// stream captures in global mode (every thread whose own mode is not
// relaxed) or thread-local mode (the capturing thread), CUDA refuses calls
// that could make the graph wrong: cudaHostAlloc, cudaHostRegister,
// cudaFreeHost, cudaHostUnregister and cudaEventQuery among them; the call
// fails with cudaErrorStreamCaptureUnsupported and the capture is
// invalidated. The allocator's own calls are none of the graph's business.
// Seen on an H100 (driver 580): event create, destroy and record on a
// stream that is not capturing, cudaStreamIsCapturing and cudaStreamGetDevice
// are allowed in every mode, so recording needs no exchange.
class RelaxedCaptureMode {
 public:
  RelaxedCaptureMode() noexcept : swapped_(exchange(mode_)) {}
  // Restores the thread's own mode, only if it was swapped out.
  ~RelaxedCaptureMode() {
    if (swapped_) (void)exchange(mode_);
  }
  RelaxedCaptureMode(const RelaxedCaptureMode&) = delete;
  RelaxedCaptureMode& operator=(const RelaxedCaptureMode&) = delete;

 private:
  // Swaps `mode` with the thread's: through the driver, or through the
  // runtime where the driver's call is missing or fails.
  static bool exchange(CUstreamCaptureMode& mode) noexcept {
    if (auto fn = driver().exchange_capture_mode; fn != nullptr && fn(&mode) == CUDA_SUCCESS) return true;
    auto runtime_mode = static_cast<cudaStreamCaptureMode>(mode);  // the same values
    if (cudaThreadExchangeStreamCaptureMode(&runtime_mode) != cudaSuccess) {
      (void)cudaGetLastError();  // not left for an unrelated later check to find
      return false;
    }
    mode = static_cast<CUstreamCaptureMode>(runtime_mode);
    return true;
  }
  CUstreamCaptureMode mode_ = CU_STREAM_CAPTURE_MODE_RELAXED;
  bool swapped_;
};

bool runtime_is_capturing(cudaStream_t s) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  cudaError_t e = cudaStreamIsCapturing(s, &status);
  // Asked of the legacy stream while a blocking stream captures (the capture
  // survives). The legacy stream itself is never captured.
  if (e == cudaErrorStreamCaptureImplicit) {
    (void)cudaGetLastError();
    return false;
  }
  check_cuda(e, "cudaStreamIsCapturing");
  return status == cudaStreamCaptureStatusActive;
}
}  // namespace

// On the allocate / record / free path a thread gives events back (its
// poll found them complete) and then takes one (its free records), so a few
// spares per thread spare both trips through mu_. A poll may give back many
// at once (one query covers many events, events.cpp): with one spare the
// rest went through mu_, which sixteen threads then met at each record. The
// spares go back to their backend's list when the thread exits or moves on
// to another backend's events, so that none sit unused in a thread that will
// not record.
struct CudaHostBackend::SpareEvent {
  static constexpr int kMax = 16;
  std::uint64_t owner = 0;
  std::array<PooledEvent*, kMax> events{};
  int count = 0;
  SpareEvent() = default;
  SpareEvent(const SpareEvent&) = delete;
  SpareEvent& operator=(const SpareEvent&) = delete;
  ~SpareEvent() { hand_back(); }
  void hand_back() noexcept {
    for (; count > 0; --count) return_to_owner(owner, events[count - 1]);
  }
};
thread_local CudaHostBackend::SpareEvent CudaHostBackend::spare_;

CudaHostBackend::CudaHostBackend(bool use_host_register, int register_threads)
    : serial_(next_backend_serial()),
      use_host_register_(use_host_register),
      register_threads_(register_threads),
      regions_(std::make_unique<NvtxMemRegions>()) {
  LiveBackends& live = live_backends();
  std::lock_guard lock(live.mu);
  live.by_serial.emplace(serial_, this);
}

CudaHostBackend::~CudaHostBackend() {
  {
    LiveBackends& live = live_backends();
    std::lock_guard lock(live.mu);
    live.by_serial.erase(serial_);
  }
  for (auto& e : all_events_) (void)cudaEventDestroy(e->event);
}

void CudaHostBackend::return_to_owner(std::uint64_t owner, PooledEvent* e) noexcept {
  LiveBackends& live = live_backends();
  std::lock_guard lock(live.mu);
  // A backend gone has destroyed its events: nothing to give back.
  if (auto it = live.by_serial.find(owner); it != live.by_serial.end()) it->second->push_free(e);
}

void CudaHostBackend::push_free(PooledEvent* e) {
  std::lock_guard lock(mu_);
  free_events_[static_cast<std::size_t>(e->device)].push_back(e);
}

std::size_t CudaHostBackend::events_created() const {
  std::lock_guard lock(mu_);
  return all_events_.size();
}

void* CudaHostBackend::allocate(std::size_t bytes) {
  RelaxedCaptureMode relaxed;
  if (use_host_register_) return allocate_registered(bytes);
  void* p = nullptr;
  cudaError_t e = cudaHostAlloc(&p, bytes, cudaHostAllocDefault);
  if (out_of_memory(e)) return nullptr;
  check_cuda(e, "cudaHostAlloc");
  return p;
}

void* CudaHostBackend::allocate_registered(std::size_t bytes) {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  void* p = std::aligned_alloc(page, (bytes + page - 1) / page * page);
  if (p == nullptr) return nullptr;
  if (bytes >= kParallelTouchBytes && register_threads_ > 1)
    touch_pages(static_cast<char*>(p), bytes, register_threads_);
  cudaError_t e = cudaHostRegister(p, bytes, cudaHostRegisterDefault);
  if (e != cudaSuccess) std::free(p);
  if (out_of_memory(e)) return nullptr;
  check_cuda(e, "cudaHostRegister");
  return p;
}

namespace {
// A release cannot throw (it runs from destructors and empty_cache()); a
// failure is said on stderr and cleared, so that no later, unrelated check of
// the runtime's last error finds it.
void report_release_failure(cudaError_t e, const char* call) noexcept {
  if (e == cudaSuccess) return;
  (void)cudaGetLastError();
  std::fprintf(stderr, "glassbox: %s failed (%s); the pinned block is lost to the cache\n", call, cudaGetErrorName(e));
}
}  // namespace

void CudaHostBackend::mark_requested(void* ptr, std::size_t requested, std::size_t block_bytes) noexcept {
  regions_->mark(ptr, requested, block_bytes);
}

void CudaHostBackend::deallocate(void* ptr, std::size_t) noexcept {
  RelaxedCaptureMode relaxed;
  regions_->forget(ptr);
  if (use_host_register_) {
    report_release_failure(cudaHostUnregister(ptr), "cudaHostUnregister");
    std::free(ptr);
  } else {
    report_release_failure(cudaFreeHost(ptr), "cudaFreeHost");
  }
}

CudaHostBackend::PooledEvent* CudaHostBackend::take_event(int device) {
  SpareEvent& spare = spare_;
  if (spare.owner == serial_ && spare.count > 0 && spare.events[spare.count - 1]->device == device) {
    return spare.events[--spare.count];
  }
  {
    std::lock_guard lock(mu_);
    if (static_cast<std::size_t>(device) >= free_events_.size())
      free_events_.resize(static_cast<std::size_t>(device) + 1);
    auto& pool = free_events_[static_cast<std::size_t>(device)];
    if (!pool.empty()) {
      PooledEvent* e = pool.back();
      pool.pop_back();
      return e;
    }
  }
  DeviceGuard guard(device);
  auto e = std::make_unique<PooledEvent>(PooledEvent{nullptr, device});
  check_cuda(cudaEventCreateWithFlags(&e->event, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  std::lock_guard lock(mu_);
  all_events_.push_back(std::move(e));
  return all_events_.back().get();
}

host_allocator::EventId CudaHostBackend::record_event(host_allocator::StreamId stream) {
  auto s = reinterpret_cast<cudaStream_t>(stream);
  PooledEvent* e = take_event(stream_device(s));
  if (auto fn = driver().event_record; fn != nullptr && fn(e->event, s) == CUDA_SUCCESS) {
    return reinterpret_cast<host_allocator::EventId>(e);
  }
  cudaError_t status = cudaEventRecord(e->event, s);
  if (status != cudaSuccess) {
    release_event(reinterpret_cast<host_allocator::EventId>(e));
    check_cuda(status, "cudaEventRecord");
  }
  return reinterpret_cast<host_allocator::EventId>(e);
}

host_allocator::EventPoll CudaHostBackend::query_event(host_allocator::EventId event) noexcept {
  cudaEvent_t e = reinterpret_cast<PooledEvent*>(event)->event;
  RelaxedCaptureMode relaxed;
  if (auto fn = driver().event_query) {
    CUresult r = fn(e);
    if (r == CUDA_SUCCESS) return {host_allocator::EventPoll::complete};
    if (r == CUDA_ERROR_NOT_READY) return {host_allocator::EventPoll::pending};
  }
  cudaError_t status = cudaEventQuery(e);
  if (status == cudaSuccess) return {host_allocator::EventPoll::complete};
  (void)cudaGetLastError();  // not the caller's error to find later
  if (status == cudaErrorNotReady) return {host_allocator::EventPoll::pending};
  return {host_allocator::EventPoll::failed, cudaGetErrorName(status)};
}

// Relaxed, as an event query: a stream query is among the calls a global
// capture on another thread forbids.
bool CudaHostBackend::stream_done(host_allocator::StreamId stream) noexcept {
  auto s = reinterpret_cast<cudaStream_t>(stream);
  RelaxedCaptureMode relaxed;
  if (auto fn = driver().stream_query) {
    const CUresult r = fn(s);
    if (r == CUDA_SUCCESS) return true;
    if (r == CUDA_ERROR_NOT_READY) return false;
  }
  const cudaError_t status = cudaStreamQuery(s);
  if (status == cudaSuccess) return true;
  (void)cudaGetLastError();  // not the caller's error to find later; the record reports a real one
  return false;
}

void CudaHostBackend::release_event(host_allocator::EventId event) noexcept {
  auto* e = reinterpret_cast<PooledEvent*>(event);
  SpareEvent& spare = spare_;
  if (spare.owner != serial_) {
    spare.hand_back();
    spare.owner = serial_;
  }
  if (spare.count < SpareEvent::kMax) {
    spare.events[spare.count++] = e;
  } else {
    push_free(e);
  }
}

host_allocator::StreamId CudaHostBackend::current_stream() const { return id(cuda::current_stream()); }

// Through the driver; any failure goes to the runtime, which reports it.
bool CudaHostBackend::is_capturing(host_allocator::StreamId stream) const {
  auto s = reinterpret_cast<cudaStream_t>(stream);
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  if (auto fn = driver().stream_is_capturing; fn != nullptr && fn(s, &status) == CUDA_SUCCESS) {
    return status == CU_STREAM_CAPTURE_STATUS_ACTIVE;
  }
  return runtime_is_capturing(s);
}

// CUDA's stream id: unique over the process's life, where handles are
// reused; for the legacy and per-thread default streams, the one meant
// (the calling thread's, for the latter).
std::uint64_t CudaHostBackend::stream_serial(host_allocator::StreamId stream) const noexcept {
  unsigned long long serial = 0;
  if (auto fn = driver().stream_get_id;
      fn != nullptr && fn(reinterpret_cast<CUstream>(stream), &serial) == CUDA_SUCCESS) {
    return serial;
  }
  if (cudaStreamGetId(reinterpret_cast<cudaStream_t>(stream), &serial) == cudaSuccess) return serial;
  (void)cudaGetLastError();  // not the caller's error to find later
  return 0;
}

bool CudaHostBackend::stream_outlives_allocator(host_allocator::StreamId stream) const noexcept {
  return is_pool_stream(reinterpret_cast<cudaStream_t>(stream));
}

host_allocator::CachingHostAllocator& cuda_host_allocator() {
  static auto* a = [] {
    host_allocator::HostAllocatorOptions o;
    auto backend = std::make_shared<CudaHostBackend>(o.config.use_host_register, o.config.register_threads);
    return new host_allocator::CachingHostAllocator(std::move(backend), o);
  }();
  return *a;
}

}  // namespace glassbox::cuda
