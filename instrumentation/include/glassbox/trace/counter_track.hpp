#pragma once
// Counter tracks: a value over time (pinned bytes, an event backlog, handles
// in use) that a trace viewer draws under the spans, so a stall can be read
// against the memory and handles of the same moment.
//
// A part owns a CounterTrack and tells it when the value changes. The value
// is either kept by the track (set(), add()) or read from the part's own
// atomics (a reader given at construction, and changed()), so a part that
// already counts pays no second read-modify-write. With no sink installed and
// no NVTX tool attached, changed() is one relaxed load: no lock, no clock.
// Otherwise each change takes the track's mutex and becomes a sample for the
// sink and for NVTX's counters extension, at most one per track per
// millisecond: a change within a millisecond of the track's last sample is
// coalesced, and the track's value is then written by the next change a
// millisecond or more later, or by flush_counter_tracks(), stamped with the
// first moment the spacing allows. A sample reads the value when it is taken,
// so a track always ends at its true final value, and every change is either
// a sample or counted as coalesced (counter_track_totals()).
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace glassbox::trace {

struct CounterSample {
  std::string_view track;  ///< valid during on_sample only
  std::int64_t value;
  std::uint64_t unix_ns;
};

/// Receives the tracks' samples, e.g. the trace-file exporter.
class CounterSink {
 public:
  virtual ~CounterSink() = default;
  /// Called on the thread that changed the value, with the track's mutex
  /// held: queue the sample and return; never block on I/O.
  virtual void on_sample(const CounterSample& sample) noexcept = 0;
};

/// Installs the process-wide sink (nullptr: none). The sink it replaces first
/// gets every coalesced value; then every live track sends its current value
/// to the new one, so tracks start at their true value. Returns once no
/// sample is in flight to the old sink. Thread-safe.
void set_counter_sink(std::shared_ptr<CounterSink> sink);

/// Sends every track's coalesced value to the sink and NVTX.
void flush_counter_tracks();

/// Over every track, alive or gone, since the process started.
struct CounterTrackTotals {
  std::uint64_t samples = 0;    ///< changes sent as samples
  std::uint64_t coalesced = 0;  ///< changes replaced by a later one within the millisecond
};
CounterTrackTotals counter_track_totals();

namespace detail {
/// Whether any track may sample: a sink is installed, or an NVTX tool took a
/// counter. Read inline, so an idle track's change costs one relaxed load.
extern std::atomic<bool> counter_tracks_live;
}  // namespace detail

class CounterTrack {
 public:
  /// The least time between two samples of one track.
  static constexpr std::uint64_t kMinIntervalNs = 1'000'000;
  /// Reads the owner's value; called under the track's mutex, so it must
  /// take no lock its owner holds while calling changed() (atomic loads).
  using Reader = std::function<std::int64_t()>;

  /// `name` is the track's name in the trace file and in NVTX, e.g.
  /// "glassbox.host.reserved_bytes #1". The track keeps the value: set(), add().
  explicit CounterTrack(std::string name);
  /// The owner keeps the value, read by `read`; call changed() after it changes.
  CounterTrack(std::string name, Reader read);
  /// Flushes a coalesced value, then leaves the process-wide list.
  ~CounterTrack();
  CounterTrack(CounterTrack&&) noexcept;
  CounterTrack& operator=(CounterTrack&&) noexcept;

  void set(std::int64_t value) noexcept;
  void add(std::int64_t delta) noexcept;
  /// The value has changed: a sample now, or a coalesced one later.
  void changed() noexcept {
    if (detail::counter_tracks_live.load(std::memory_order_relaxed)) [[unlikely]]
      changed_live();
  }
  std::int64_t value() const;
  const std::string& name() const noexcept;

  struct State;  // in the process-wide list (counter_track.cpp)

 private:
  void changed_live() noexcept;

  std::unique_ptr<State> state_;
};

}  // namespace glassbox::trace
