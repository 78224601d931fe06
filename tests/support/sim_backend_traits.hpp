#pragma once
// The sim backends as the typed suites (tests/typed) see them. A backend's
// traits give the typed test bodies what they need of a device without
// naming it: the backend, streams a test owns, gates that hold a stream at a
// point of its order until the test opens them, work queued on a stream,
// capture, and the backend's own counts where it has any.
// tests/gpu/cuda_backend_traits.hpp gives the same for the CUDA backends.
//
// Streams here run by themselves (SimStream worker mode), as GPU streams do;
// a gate is a queued item that blocks the stream's worker until opened. The
// sim-only suites (tests/unit) step manual streams by hand instead, for exact
// orderings.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "glassbox/cudnn/sim_cudnn_backend.hpp"
#include "glassbox/host_allocator/caching_host_allocator.hpp"
#include "glassbox/host_allocator/sim_host_backend.hpp"
#include "glassbox/metrics/registry.hpp"
#include "glassbox/sim/sim_stream.hpp"

namespace glassbox::testing {

/// Holds a worker-mode SimStream where it is queued: work queued after it
/// waits until open() (or the destructor). Gives up after 30 s and reports a
/// failure, so that a test that forgets to open fails instead of hanging.
class SimGate {
 public:
  explicit SimGate(sim::SimStream* stream) : state_(std::make_shared<State>()) {
    stream->enqueue([state = state_] {
      std::unique_lock lock(state->mu);
      if (!state->cv.wait_for(lock, std::chrono::seconds(30), [&] { return state->open; })) state->timed_out = true;
    });
  }
  ~SimGate() { open(); }
  SimGate(const SimGate&) = delete;
  SimGate& operator=(const SimGate&) = delete;

  /// Lets the stream go on. Does not wait for it.
  void open() {
    std::lock_guard lock(state_->mu);
    if (state_->timed_out) ADD_FAILURE() << "a gate was held past its time limit";
    state_->open = true;
    state_->cv.notify_all();
  }

 private:
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    bool open = false;
    bool timed_out = false;
  };
  std::shared_ptr<State> state_;
};

/// A worker-mode SimStream the test owns (sim streams belong to no device).
class SimTestStream {
 public:
  explicit SimTestStream(int /*device*/ = 0)
      : stream_(std::make_unique<sim::SimStream>(sim::SimStream::Mode::worker, "test-stream")) {}
  sim::SimStream* native() const noexcept { return stream_.get(); }
  /// Waits until everything queued so far has run.
  void synchronize() { stream_->synchronize(); }

 private:
  std::unique_ptr<sim::SimStream> stream_;
};

/// Queues `task` on `stream`; it runs on the stream's worker, in the stream's order.
inline void sim_host_task(sim::SimStream* stream, std::function<void()> task) { stream->enqueue(std::move(task)); }

/// The caching host allocator on SimHostBackend.
struct SimHostTraits {
  using Backend = host_allocator::SimHostBackend;
  using Gate = SimGate;

  /// Why this backend cannot run here; empty when it can.
  static std::string unavailable() { return {}; }
  static std::shared_ptr<Backend> make_backend(const host_allocator::HostAllocatorConfig&) {
    return std::make_shared<Backend>();
  }

  class Stream : public SimTestStream {
   public:
    Stream() = default;
    /// A stream `backend` knows outlives the allocator, as a CUDA pool stream.
    explicit Stream(Backend& backend) { backend.pool_stream.store(id()); }
    host_allocator::StreamId id() const noexcept { return Backend::id(*native()); }
  };

  /// Makes `s` the calling thread's current stream while the result lives.
  static host_allocator::SimStreamGuard make_current(Stream& s) noexcept {
    return host_allocator::SimStreamGuard(*s.native());
  }
  static void begin_capture(Stream& s) { s.native()->begin_capture(); }
  static void end_capture(Stream& s) { s.native()->end_capture(); }
  /// Queues, during capture, work that reads the `bytes` at `ptr` (CUDA: a
  /// captured copy the graph replays later; the sim records nothing).
  static void read_during_capture(Stream& s, const void*, std::size_t) {
    s.native()->enqueue([] {});
  }
  /// Queues `task` on `s`: it runs in the stream's order, after any gate queued before it.
  static void host_task(Stream& s, std::function<void()> task) { sim_host_task(s.native(), std::move(task)); }

  /// Queues on `s` a copy of the `bytes` at `ptr`, made when the stream gets
  /// there (after any gate queued before it).
  class Read {
   public:
    Read(Stream& s, const void* ptr, std::size_t bytes) : stream_(s), copy_(std::make_shared<Copy>()) {
      copy_->bytes.resize(bytes);
      s.native()->enqueue([copy = copy_, ptr, bytes] { std::memcpy(copy->bytes.data(), ptr, bytes); });
    }
    /// Waits for the stream, then returns what the copy saw.
    std::vector<unsigned char> bytes() {
      stream_.synchronize();
      return copy_->bytes;
    }

   private:
    struct Copy {
      std::vector<unsigned char> bytes;
    };
    Stream& stream_;
    std::shared_ptr<Copy> copy_;
  };

  /// The backend's own counts (the sim's ground truth): events and blocks
  /// it holds now, blocks it has allocated. nullopt where a backend keeps none.
  static std::optional<std::size_t> live_events(const Backend& b) { return b.live_events(); }
  static std::optional<std::size_t> live_blocks(const Backend& b) { return b.live_blocks(); }
  static std::optional<std::size_t> allocations_made(const Backend& b) { return b.allocations(); }
};

/// The cuDNN state wrapper on SimCudnnBackend, with two devices and state
/// streams that run by themselves.
struct SimCudnnTraits {
  using Backend = cudnn::SimCudnnBackend;
  using Stream = SimTestStream;
  using Gate = SimGate;

  static std::string unavailable() { return {}; }
  static Backend make_backend(metrics::Registry& registry) {
    return Backend({.device_count = 2, .state_streams = sim::SimStream::Mode::worker}, registry);
  }
  static void host_task(sim::SimStream* stream, std::function<void()> task) { sim_host_task(stream, std::move(task)); }
  /// Waits until everything queued on `stream` so far has run.
  static void synchronize(sim::SimStream* stream) {
    if (stream != nullptr) stream->synchronize();
  }
  /// State streams the backend holds now; nullopt where a backend cannot tell.
  static std::optional<std::size_t> live_state_streams(const Backend& b) { return b.live().streams; }
};

}  // namespace glassbox::testing
