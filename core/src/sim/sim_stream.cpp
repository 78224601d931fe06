#include "glassbox/sim/sim_stream.hpp"

#include <atomic>

#include <chrono>

#include "glassbox/error.hpp"

namespace glassbox::sim {

// Shared between a stream and the events recorded on it, so an event outlives
// its stream: a destroyed stream has run everything (worker) or never will.
struct SimEvent::State {
  std::mutex mu;
  std::condition_variable cv;  // signalled whenever `completed` advances or work arrives
  std::uint64_t submitted = 0;
  std::uint64_t completed = 0;
};

bool SimEvent::query() const {
  if (!stream_) return true;
  std::lock_guard lock(stream_->mu);
  return stream_->completed >= position_;
}

void SimEvent::synchronize() const {
  if (!stream_) return;
  std::unique_lock lock(stream_->mu);
  if (!stream_->cv.wait_for(lock, std::chrono::seconds(30), [&] { return stream_->completed >= position_; })) {
    throw Error("SimEvent::synchronize: event at position " + std::to_string(position_) +
                " did not complete in 30 s (a manual stream must be stepped)");
  }
}

namespace {
std::uint64_t next_serial() noexcept {
  static std::atomic<std::uint64_t> next{0};
  return next.fetch_add(1, std::memory_order_relaxed) + 1;
}
}  // namespace

SimStream::SimStream(Mode mode, std::string name)
    : mode_(mode), name_(std::move(name)), serial_(next_serial()), state_(std::make_shared<SimEvent::State>()) {
  if (mode_ == Mode::worker) worker_ = std::thread([this] { worker_loop(); });
}

SimStream::~SimStream() {
  if (mode_ != Mode::worker) return;
  {
    std::lock_guard lock(state_->mu);
    stopping_ = true;
  }
  state_->cv.notify_all();
  worker_.join();
}

std::uint64_t SimStream::enqueue(std::function<void()> work) {
  std::uint64_t position;
  {
    std::lock_guard lock(state_->mu);
    queue_.push_back({std::move(work), {}});
    position = ++state_->submitted;
  }
  state_->cv.notify_all();
  return position;
}

SimEvent SimStream::record() {
  std::lock_guard lock(state_->mu);
  return SimEvent(state_, state_->submitted);
}

void SimStream::wait(const SimEvent& event) {
  {
    std::lock_guard lock(state_->mu);
    queue_.push_back({nullptr, event});
    ++state_->submitted;
  }
  state_->cv.notify_all();
}

// Runs the front item if it can run. Called with the lock held; drops it
// while the work runs, so work may enqueue on this or other streams.
bool SimStream::run_one(std::unique_lock<std::mutex>& lock) {
  // One runner at a time: the front item stays ours while the lock is
  // dropped (other threads only append, which keeps deque references valid).
  if (queue_.empty() || running_) return false;
  running_ = true;
  struct Done {
    bool& flag;
    ~Done() { flag = false; }
  } done{running_};
  Item& front = queue_.front();
  if (front.wait_for.stream_ == state_) {
    // Waiting on our own stream: the event precedes this item, so it is complete.
  } else if (front.wait_for.stream_) {
    lock.unlock();
    bool ready = front.wait_for.query();
    lock.lock();
    if (!ready) return false;
  }
  std::function<void()> work = std::move(front.work);
  queue_.pop_front();
  if (work) {
    lock.unlock();
    work();
    lock.lock();
  }
  ++state_->completed;
  state_->cv.notify_all();
  return true;
}

bool SimStream::step() {
  std::unique_lock lock(state_->mu);
  return run_one(lock);
}

std::size_t SimStream::run_until_blocked() {
  std::size_t n = 0;
  while (step()) ++n;
  return n;
}

void SimStream::synchronize() {
  if (mode_ == Mode::manual) {
    run_until_blocked();
    std::lock_guard lock(state_->mu);
    if (!queue_.empty()) {
      throw Error("SimStream '" + name_ +
                  "': synchronize() would block forever: a wait on another stream's "
                  "event is not complete; step that stream first");
    }
    return;
  }
  record().synchronize();
}

std::uint64_t SimStream::submitted() const {
  std::lock_guard lock(state_->mu);
  return state_->submitted;
}

std::uint64_t SimStream::completed() const {
  std::lock_guard lock(state_->mu);
  return state_->completed;
}

bool SimStream::idle() const {
  std::lock_guard lock(state_->mu);
  return state_->completed == state_->submitted;
}

void SimStream::begin_capture() {
  std::lock_guard lock(state_->mu);
  capturing_ = true;
}

void SimStream::end_capture() {
  std::lock_guard lock(state_->mu);
  capturing_ = false;
}

bool SimStream::capturing() const {
  std::lock_guard lock(state_->mu);
  return capturing_;
}

// A blocked wait is re-checked every 50 us: the event's stream signals its
// own condition variable, not ours.
void SimStream::worker_loop() {
  std::unique_lock lock(state_->mu);
  while (true) {
    if (run_one(lock)) continue;
    if (stopping_ && queue_.empty()) return;
    state_->cv.wait_for(lock, std::chrono::microseconds(50));
  }
}

}  // namespace glassbox::sim
