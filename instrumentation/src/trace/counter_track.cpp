#include "glassbox/trace/counter_track.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <utility>
#include <vector>

#include "glassbox/nvtx/counter.hpp"

namespace glassbox::trace {

std::atomic<bool> detail::counter_tracks_live{false};

struct CounterTrack::State {
  std::string name;
  std::uint64_t nvtx_id = 0;  // 0: no NVTX tool took the counter
  Reader read;                // empty: the value is `kept`
  std::atomic<std::int64_t> kept{0};
  std::mutex mu;                   // guards the rest, and orders the track's samples
  std::uint64_t last_ns = 0;       // when the last sample was taken; 0: none yet
  bool pending = false;            // a change since then was coalesced, not yet sent
  std::int64_t pending_value = 0;  // the value after that change
  std::uint64_t samples = 0;
  std::uint64_t coalesced = 0;

  State(std::string n, Reader r) : name(std::move(n)), read(std::move(r)) {}
  std::int64_t value() const { return read ? read() : kept.load(std::memory_order_relaxed); }
};

namespace {

using State = CounterTrack::State;

struct Globals {
  std::mutex mu;  // guards the list, the sink's owner, and the totals of gone tracks
  std::vector<State*> tracks;
  std::shared_ptr<CounterSink> sink_owner;
  CounterTrackTotals gone;
};

Globals& globals() {
  static Globals* g = new Globals;  // leaked: tracks of leaked pools outlive static destruction
  return *g;
}

// Read on every change; a plain pointer, as loading a shared_ptr costs atomic
// read-modify-writes. set_counter_sink keeps the sink alive while it is here.
std::atomic<CounterSink*> g_sink{nullptr};

std::uint64_t unix_now_ns() noexcept {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
}

bool live(const State& s) noexcept { return s.nvtx_id != 0 || g_sink.load(std::memory_order_relaxed) != nullptr; }

// Caller holds s.mu.
void send(State& s, std::int64_t value, std::uint64_t at_ns) noexcept {
  if (s.nvtx_id != 0) nvtx::sample_counter(s.nvtx_id, value);
  if (CounterSink* sink = g_sink.load(std::memory_order_acquire)) sink->on_sample({s.name, value, at_ns});
  s.last_ns = at_ns;
  s.pending = false;
  ++s.samples;
}

// Caller holds s.mu. Stamped at the first moment the spacing allows: the
// coalesced value held from before then until the change that ends it.
void send_pending(State& s, std::int64_t value) noexcept { send(s, value, s.last_ns + CounterTrack::kMinIntervalNs); }

// Caller holds s.mu; the value has just changed. A coalesced value whose
// millisecond has passed goes out first, so the track shows it until now.
void on_change(State& s) noexcept {
  const std::uint64_t now = unix_now_ns();
  if (s.pending && now >= s.last_ns + CounterTrack::kMinIntervalNs) send_pending(s, s.pending_value);
  if (s.last_ns == 0 || now >= s.last_ns + CounterTrack::kMinIntervalNs) {
    send(s, s.value(), now);
    return;
  }
  if (s.pending) ++s.coalesced;  // replaced by this change within the millisecond
  s.pending = true;
  s.pending_value = s.value();
}

// Caller holds s.mu. Read again: the value is the latest, even where its
// owner's change has not reached changed() yet.
void flush(State& s) noexcept {
  if (s.pending) send_pending(s, s.value());
}

}  // namespace

CounterTrack::CounterTrack(std::string name) : CounterTrack(std::move(name), nullptr) {}

CounterTrack::CounterTrack(std::string name, Reader read)
    : state_(std::make_unique<State>(std::move(name), std::move(read))) {
  state_->nvtx_id = nvtx::register_counter(state_->name.c_str());
  if (state_->nvtx_id != 0) detail::counter_tracks_live.store(true, std::memory_order_relaxed);
  Globals& g = globals();
  std::lock_guard lock(g.mu);
  g.tracks.push_back(state_.get());
  std::lock_guard track_lock(state_->mu);
  if (live(*state_)) send(*state_, state_->value(), unix_now_ns());
}

CounterTrack::~CounterTrack() {
  if (!state_) return;
  Globals& g = globals();
  std::lock_guard lock(g.mu);
  {
    std::lock_guard track_lock(state_->mu);
    flush(*state_);
    g.gone.samples += state_->samples;
    g.gone.coalesced += state_->coalesced;
  }
  std::erase(g.tracks, state_.get());
}

CounterTrack::CounterTrack(CounterTrack&&) noexcept = default;
CounterTrack& CounterTrack::operator=(CounterTrack&& other) noexcept {
  CounterTrack gone(std::move(*this));
  state_ = std::move(other.state_);
  return *this;
}

void CounterTrack::set(std::int64_t value) noexcept {
  state_->kept.store(value, std::memory_order_relaxed);
  changed();
}

void CounterTrack::add(std::int64_t delta) noexcept {
  state_->kept.fetch_add(delta, std::memory_order_relaxed);
  changed();
}

void CounterTrack::changed_live() noexcept {
  State& s = *state_;
  if (!live(s)) return;
  std::lock_guard lock(s.mu);
  on_change(s);
}

std::int64_t CounterTrack::value() const { return state_->value(); }
const std::string& CounterTrack::name() const noexcept { return state_->name; }

void set_counter_sink(std::shared_ptr<CounterSink> sink) {
  Globals& g = globals();
  std::shared_ptr<CounterSink> old;  // released after the lock, as it may be the last owner
  std::lock_guard lock(g.mu);
  for (State* s : g.tracks) {  // the old sink gets the values it has not seen
    std::lock_guard track_lock(s->mu);
    flush(*s);
  }
  g_sink.store(sink.get(), std::memory_order_release);
  if (sink) detail::counter_tracks_live.store(true, std::memory_order_relaxed);
  old = std::exchange(g.sink_owner, std::move(sink));
  // Every sample goes out under its track's mutex: once each has been taken
  // here, none is still on its way to the old sink.
  for (State* s : g.tracks) {
    std::lock_guard track_lock(s->mu);
    if (g.sink_owner) send(*s, s->value(), unix_now_ns());
  }
}

void flush_counter_tracks() {
  Globals& g = globals();
  std::lock_guard lock(g.mu);
  for (State* s : g.tracks) {
    std::lock_guard track_lock(s->mu);
    flush(*s);
  }
}

CounterTrackTotals counter_track_totals() {
  Globals& g = globals();
  std::lock_guard lock(g.mu);
  CounterTrackTotals t = g.gone;
  for (State* s : g.tracks) {
    std::lock_guard track_lock(s->mu);
    t.samples += s->samples;
    t.coalesced += s->coalesced;
  }
  return t;
}

}  // namespace glassbox::trace
