#pragma once
// The host allocator's CUDA backend: pinned memory from cudaHostAlloc (or
// malloc + cudaHostRegister), events from a per-device pool of reusable
// timing-free events (each thread keeps the one it gave back last), stream
// capture state from cudaStreamIsCapturing, stream queries; glassbox's pool streams
// (stream_pool.hpp) are known to outlive it. Calls that a graph capture
// forbids (host memory, event queries) run in relaxed capture mode, so they
// are safe during a capture in any mode.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "glassbox/host_allocator/caching_host_allocator.hpp"
#include "glassbox/host_allocator/host_backend.hpp"

namespace glassbox::cuda {

class NvtxMemRegions;  // cuda/src/host_allocator/nvtx_mem_regions.hpp

class CudaHostBackend final : public host_allocator::HostBackend {
 public:
  /// `register_threads` threads touch a large block's pages before
  /// cudaHostRegister pins it, when `use_host_register` is set.
  CudaHostBackend(bool use_host_register, int register_threads);
  ~CudaHostBackend() override;

  static host_allocator::StreamId id(cudaStream_t s) noexcept { return reinterpret_cast<host_allocator::StreamId>(s); }
  void* allocate(std::size_t bytes) override;
  void deallocate(void* ptr, std::size_t bytes) noexcept override;
  host_allocator::EventId record_event(host_allocator::StreamId stream) override;
  host_allocator::EventPoll query_event(host_allocator::EventId event) noexcept override;
  void release_event(host_allocator::EventId event) noexcept override;
  /// A stream query (cuStreamQuery), in relaxed capture mode.
  bool stream_done(host_allocator::StreamId stream) noexcept override;
  host_allocator::StreamId current_stream() const override;
  bool is_capturing(host_allocator::StreamId stream) const override;
  /// True for glassbox's pool streams (stream_pool.hpp), which are never destroyed.
  bool stream_outlives_allocator(host_allocator::StreamId stream) const noexcept override;
  std::uint64_t stream_serial(host_allocator::StreamId stream) const noexcept override;
  std::string name() const override { return "cuda"; }
  void mark_requested(void* ptr, std::size_t requested, std::size_t block_bytes) noexcept override;
  /// Events this backend has created: each is reused once its poll finds it
  /// complete, so this stays near the most ever pending at once.
  std::size_t events_created() const;

 private:
  void* allocate_registered(std::size_t bytes);

  // An EventId points at one of these; they live as long as the backend.
  struct PooledEvent {
    cudaEvent_t event;
    int device;
  };
  PooledEvent* take_event(int device);
  void push_free(PooledEvent* e);  // onto its device's list, under mu_

  // A thread's spare events (cuda_host_backend.cpp): the last few it gave
  // back, taken again by its next records without mu_.
  struct SpareEvent;
  static thread_local SpareEvent spare_;
  // Gives an event back to the backend with that serial, if it still exists.
  static void return_to_owner(std::uint64_t owner, PooledEvent* e) noexcept;

  const std::uint64_t serial_;  // never reused: names this backend in spare_ and the live registry
  const bool use_host_register_;
  const int register_threads_;
  mutable std::mutex mu_;
  std::vector<std::vector<PooledEvent*>> free_events_;  // per device
  std::vector<std::unique_ptr<PooledEvent>> all_events_;
  const std::unique_ptr<NvtxMemRegions> regions_;  // blocks marked by mark_requested()
};

/// The process-wide pinned-memory allocator on the CUDA backend, configured
/// from GLASSBOX_HOST_ALLOC_CONF. Never destroyed (pinned memory is returned
/// by the driver at exit; freeing it during exit can crash).
host_allocator::CachingHostAllocator& cuda_host_allocator();

}  // namespace glassbox::cuda
