#pragma once
// Node tasks waiting to run on one thread's or device's queue, highest
// priority first: shutdown, then wake-ups, then deeper reentrant graph tasks
// (so a nested backward finishes and unblocks its parent), then higher
// sequence numbers.
// Thread-safety: push and pop from any threads.
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <span>
#include <vector>

#include "glassbox/autograd/engine_metrics.hpp"
#include "glassbox/autograd/graph_task.hpp"
#include "glassbox/autograd/input_buffer.hpp"

namespace glassbox::autograd {

struct NodeTask {
  enum class Kind : std::uint8_t { run = 0, wake = 1, shutdown = 2 };

  static NodeTask run(GraphTask& g, Node& node, InputBuffer inputs);
  static NodeTask wake() { return of(Kind::wake); }
  static NodeTask shutdown() { return of(Kind::shutdown); }
  static NodeTask of(Kind kind) {
    NodeTask t;
    t.kind = kind;
    return t;
  }

  Kind kind = Kind::run;
  int depth = 0;
  std::uint64_t sequence_nr = 0;
  // Not owned: a graph task outlives its node tasks (its execute returns
  // only once every one has finished), and its nodes outlive the execute
  // (the roots it was given hold them). Owned, they cost a node four atomic
  // read-modify-writes, which a Xeon makes ~8 ns each.
  GraphTask* graph_task = nullptr;
  Node* node = nullptr;
  InputBuffer inputs;
};

/// Whether `a` runs after `b` (lower priority): std heap order.
bool runs_after(const NodeTask& a, const NodeTask& b) noexcept;

class ReadyQueue {
 public:
  /// `metrics.queue_depth` follows the number of node tasks held.
  explicit ReadyQueue(DeviceMetrics metrics) noexcept : metrics_(metrics) {}

  void push(NodeTask task);
  /// Moves every task of `tasks` in at once (one lock, one wake-up); leaves it empty.
  void push_all(std::vector<NodeTask>& tasks);
  /// Blocks until a task is there.
  NodeTask pop();
  const DeviceMetrics& metrics() const noexcept { return metrics_; }
  /// Whether no task is held, without the lock: a push racing with it may or
  /// may not be seen, as if it came just after.
  bool looks_empty() const noexcept { return size_.load(std::memory_order_relaxed) == 0; }

 private:
  // Moves `tasks` in under one lock and wakes one waiter.
  void insert(std::span<NodeTask> tasks);

  DeviceMetrics metrics_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<NodeTask> heap_;
  std::atomic<std::size_t> size_{0};  ///< heap_.size(), written under mu_
};

}  // namespace glassbox::autograd
