#include "glassbox/cuda/host_allocator/cuda_host_backend.hpp"

#include <unistd.h>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <unordered_map>
#include <utility>

#include "glassbox/cuda/cuda_check.hpp"
#include "glassbox/error.hpp"

namespace glassbox::cuda {

namespace {
thread_local cudaStream_t tl_stream = nullptr;

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
}  // namespace

// On the allocate / record / free path a thread gives an event back (its
// poll found it complete) and then takes one (its free records), so one
// spare per thread spares both trips through mu_. It goes back to its
// backend's list when the thread exits or moves on to another backend's
// events, so that no event sits unused in a thread that will not record.
struct CudaHostBackend::SpareEvent {
  std::uint64_t owner = 0;
  PooledEvent* event = nullptr;
  SpareEvent() = default;
  SpareEvent(const SpareEvent&) = delete;
  SpareEvent& operator=(const SpareEvent&) = delete;
  ~SpareEvent() { hand_back(); }
  void hand_back() noexcept {
    if (event != nullptr) return_to_owner(owner, event);
    event = nullptr;
  }
};
thread_local CudaHostBackend::SpareEvent CudaHostBackend::spare_;

CudaHostBackend::CudaHostBackend(bool use_host_register, int register_threads)
    : serial_(next_backend_serial()), use_host_register_(use_host_register), register_threads_(register_threads) {
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

void CudaHostBackend::set_current_stream(cudaStream_t s) noexcept { tl_stream = s; }

void* CudaHostBackend::allocate(std::size_t bytes) {
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

void CudaHostBackend::deallocate(void* ptr, std::size_t) noexcept {
  if (use_host_register_) {
    (void)cudaHostUnregister(ptr);
    std::free(ptr);
  } else {
    (void)cudaFreeHost(ptr);
  }
}

CudaHostBackend::PooledEvent* CudaHostBackend::take_event(int device) {
  SpareEvent& spare = spare_;
  if (spare.owner == serial_ && spare.event != nullptr && spare.event->device == device) {
    return std::exchange(spare.event, nullptr);
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
  cudaError_t status = cudaEventRecord(e->event, s);
  if (status != cudaSuccess) {
    release_event(reinterpret_cast<host_allocator::EventId>(e));
    check_cuda(status, "cudaEventRecord");
  }
  return reinterpret_cast<host_allocator::EventId>(e);
}

bool CudaHostBackend::query_event(host_allocator::EventId event) {
  cudaError_t status = cudaEventQuery(reinterpret_cast<PooledEvent*>(event)->event);
  if (status == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return false;
  }
  check_cuda(status, "cudaEventQuery");
  return true;
}

void CudaHostBackend::release_event(host_allocator::EventId event) noexcept {
  auto* e = reinterpret_cast<PooledEvent*>(event);
  SpareEvent& spare = spare_;
  if (spare.owner != serial_) spare.hand_back();
  if (spare.event == nullptr) {
    spare.owner = serial_;
    spare.event = e;
  } else {
    push_free(e);
  }
}

host_allocator::StreamId CudaHostBackend::current_stream() const { return id(tl_stream); }

bool CudaHostBackend::is_capturing(host_allocator::StreamId stream) const {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  check_cuda(cudaStreamIsCapturing(reinterpret_cast<cudaStream_t>(stream), &status), "cudaStreamIsCapturing");
  return status == cudaStreamCaptureStatusActive;
}

CudaStreamGuard::CudaStreamGuard(cudaStream_t s) noexcept : previous_(tl_stream) { tl_stream = s; }
CudaStreamGuard::~CudaStreamGuard() { tl_stream = previous_; }

host_allocator::CachingHostAllocator& cuda_host_allocator() {
  static auto* a = [] {
    host_allocator::HostAllocatorOptions o;
    auto backend = std::make_shared<CudaHostBackend>(o.config.use_host_register, o.config.register_threads);
    return new host_allocator::CachingHostAllocator(std::move(backend), o);
  }();
  return *a;
}

}  // namespace glassbox::cuda
