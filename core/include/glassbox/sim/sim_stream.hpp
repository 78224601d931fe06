#pragma once
// The sim backend's streams and events: the ordering rules of CUDA streams,
// without a GPU, so ordering logic can be tested deterministically.
//
// A SimStream runs its work items strictly in submission order. In manual
// mode nothing runs until a test calls step()/run_until_blocked(); in worker
// mode a thread of its own runs items as they arrive. An event recorded on a
// stream completes when the stream has run everything submitted before it; a
// wait item blocks the stream until another stream's event completes (as
// cudaStreamWaitEvent does).
//
// Thread-safety: every member may be called from any thread.
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace glassbox::sim {

class SimStream;

/// A point in a stream's order. Default-constructed: never recorded, always complete.
class SimEvent {
 public:
  SimEvent() = default;
  /// True once the stream has run every item submitted before the record.
  bool query() const;
  /// Blocks until query() is true (worker mode) or throws (manual mode: nothing would run it).
  void synchronize() const;
  std::uint64_t position() const noexcept { return position_; }

 private:
  friend class SimStream;
  struct State;
  SimEvent(std::shared_ptr<State> stream, std::uint64_t position) : stream_(std::move(stream)), position_(position) {}
  std::shared_ptr<State> stream_;
  std::uint64_t position_ = 0;
};

class SimStream {
 public:
  enum class Mode { manual, worker };

  explicit SimStream(Mode mode = Mode::manual, std::string name = "sim-stream");
  /// Worker mode: runs what was submitted, then joins the worker.
  ~SimStream();
  SimStream(const SimStream&) = delete;
  SimStream& operator=(const SimStream&) = delete;

  /// Queues `work`; returns its position (1, 2, ...).
  std::uint64_t enqueue(std::function<void()> work);
  /// An event that completes when everything queued so far has run.
  SimEvent record();
  /// Blocks this stream (not the caller) until `event` completes.
  void wait(const SimEvent& event);

  /// Manual mode: runs the next item if it can run; false when the stream is
  /// empty or blocked on an incomplete event.
  bool step();
  /// Steps until empty or blocked; returns how many items ran.
  std::size_t run_until_blocked();
  /// Waits until every item queued so far has run (worker mode), or runs
  /// them (manual mode; throws glassbox::Error if blocked forever).
  void synchronize();

  std::uint64_t submitted() const;
  std::uint64_t completed() const;
  /// True when every item queued so far has run (as cudaStreamQuery).
  bool idle() const;
  const std::string& name() const noexcept { return name_; }
  /// A number no other SimStream of the process had (1, 2, ...), where a
  /// destroyed stream's address may come back for a new one.
  std::uint64_t serial() const noexcept { return serial_; }

  /// Stream capture, as cudaStreamBeginCapture/EndCapture mark it.
  void begin_capture();
  void end_capture();
  bool capturing() const;

 private:
  struct Item {
    std::function<void()> work;
    SimEvent wait_for;
  };
  bool run_one(std::unique_lock<std::mutex>& lock);
  void worker_loop();

  const Mode mode_;
  const std::string name_;
  const std::uint64_t serial_;
  std::shared_ptr<SimEvent::State> state_;
  std::deque<Item> queue_;  // guarded by state_->mu
  bool stopping_ = false;
  bool running_ = false;  // an item is being run (guarded by state_->mu)
  bool capturing_ = false;
  std::thread worker_;
};

}  // namespace glassbox::sim
