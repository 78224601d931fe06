#pragma once
// The host allocator's sim backend: memory from aligned malloc, events on
// SimStreams, and faults on demand (allocations that fail, event records that
// throw, queries that fail, a capacity limit), with counters of everything
// live so tests can prove nothing leaked. As in CUDA, an event recorded on a
// capturing stream is captured: its polls fail ("invalid_value").
#include <atomic>
#include <cstddef>
#include <map>
#include <mutex>

#include "glassbox/host_allocator/host_backend.hpp"
#include "glassbox/sim/sim_stream.hpp"

namespace glassbox::host_allocator {

class SimHostBackend final : public HostBackend {
 public:
  /// Faults, consumed one per call: the next N calls fail.
  std::atomic<int> fail_allocations{0};  ///< allocate() returns nullptr (out of memory)
  std::atomic<int> fail_records{0};      ///< record_event() throws BackendError
  std::atomic<int> fail_queries{0};      ///< query_event() fails ("injected")
  /// allocate() returns nullptr once live bytes would pass this (0: no limit).
  std::atomic<std::size_t> capacity_bytes{0};
  /// A stream the backend knows outlives any allocator, as CUDA's pool
  /// streams (stream_outlives_allocator() answers true for it; 0: none).
  std::atomic<StreamId> pool_stream{0};

  static StreamId id(sim::SimStream& s) noexcept { return reinterpret_cast<StreamId>(&s); }
  /// The calling thread's current stream (as CUDA's current stream), for all sim backends.
  static void set_current_stream(sim::SimStream* s) noexcept;

  void* allocate(std::size_t bytes) override;
  void deallocate(void* ptr, std::size_t bytes) noexcept override;
  EventId record_event(StreamId stream) override;
  EventPoll query_event(EventId event) noexcept override;
  void release_event(EventId event) noexcept override;
  StreamId current_stream() const override;
  bool is_capturing(StreamId stream) const override;
  bool stream_done(StreamId stream) noexcept override;
  bool stream_outlives_allocator(StreamId stream) const noexcept override {
    return stream != 0 && stream == pool_stream.load(std::memory_order_relaxed);
  }
  std::uint64_t stream_serial(StreamId stream) const noexcept override {
    return stream == 0 ? 0 : reinterpret_cast<const sim::SimStream*>(stream)->serial();
  }
  std::string name() const override { return "sim"; }

  std::size_t live_bytes() const;
  std::size_t live_blocks() const;
  std::size_t live_events() const;
  std::size_t allocations() const;  ///< successful allocate() calls

 private:
  mutable std::mutex mu_;
  std::map<void*, std::size_t> live_;
  std::size_t live_bytes_ = 0;
  std::size_t allocations_ = 0;
  struct Recorded {
    sim::SimEvent event;
    bool captured;  // recorded while its stream was capturing
  };
  std::map<EventId, Recorded> events_;
  EventId next_event_ = 1;
};

/// Makes a sim::SimStream the calling thread's current stream for a scope.
class SimStreamGuard {
 public:
  explicit SimStreamGuard(sim::SimStream& s) noexcept;
  ~SimStreamGuard();
  SimStreamGuard(const SimStreamGuard&) = delete;
  SimStreamGuard& operator=(const SimStreamGuard&) = delete;

 private:
  sim::SimStream* previous_;
};

}  // namespace glassbox::host_allocator
