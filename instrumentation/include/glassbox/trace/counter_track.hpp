#pragma once
// Counter tracks: a value over time (pinned bytes, an event backlog, handles
// in use) that a trace viewer draws under the spans, so a stall can be read
// against the memory and handles of the same moment.
//
// A part owns a CounterTrack and calls add() or set() where the value
// changes. With no sink installed and no NVTX tool attached that is an
// atomic add (add) or store (set) and one relaxed load. Otherwise each change
// takes the track's mutex and becomes a sample for the sink and for NVTX's
// counters extension, at most one per track per millisecond: a change within
// a millisecond of the track's last sample is coalesced, and the track's
// value is then written by the next change a millisecond or more later, or by
// flush_counter_tracks(), stamped with the first moment the spacing allows,
// when it was still the value (nothing else changed it in between). So a track
// always ends at its true final value, and every change is either a sample or
// counted as coalesced (counter_track_totals()).
#include <cstdint>
#include <memory>
#include <mutex>
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

class CounterTrack {
 public:
  /// The least time between two samples of one track.
  static constexpr std::uint64_t kMinIntervalNs = 1'000'000;

  /// `name` is the track's name in the trace file and in NVTX, e.g.
  /// "glassbox.host.reserved_bytes".
  explicit CounterTrack(std::string name, std::int64_t initial = 0);
  /// Flushes a coalesced value, then leaves the process-wide list.
  ~CounterTrack();
  CounterTrack(CounterTrack&&) noexcept;
  CounterTrack& operator=(CounterTrack&&) noexcept;

  void add(std::int64_t delta) noexcept;
  void set(std::int64_t value) noexcept;
  std::int64_t value() const noexcept;
  const std::string& name() const noexcept;

  struct State;  // in the process-wide list (counter_track.cpp)

 private:
  std::unique_ptr<State> state_;
};

}  // namespace glassbox::trace
