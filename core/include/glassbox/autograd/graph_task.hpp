#pragma once
// The state of one Engine::execute: which nodes still wait for gradients,
// how many queued tasks are unfinished, what to capture, the first error and
// the callbacks to run at the end. Shared (shared_ptr) by every task queued
// for it, so a worker never touches a freed task. A task drops its reference
// before it counts itself finished, so once `outstanding` is 0 the execute
// that made it holds the only one and may keep it for its thread's next
// execute (clear(), then reuse(); a nested backward per checkpoint node would
// otherwise build and free one, its tables included, each time).
//
// Thread-safety: the atomics are read and written anywhere; everything under
// "guarded by mu" needs mu; exec_info and the settings are written before
// the first task is queued and only read afterwards.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "glassbox/autograd/edge.hpp"
#include "glassbox/autograd/input_buffer.hpp"
#include "glassbox/autograd/node.hpp"
#include "glassbox/autograd/node_map.hpp"
#include "glassbox/trace/span_context.hpp"

namespace glassbox::autograd {

class ReadyQueue;

/// For an execute with output edges: whether a node must run, and which of
/// its input slots are captured into which result.
struct ExecInfo {
  bool needed = false;
  bool visited = false;                                         ///< seen by the search that sets `needed`
  std::vector<std::pair<std::uint32_t, std::size_t>> captures;  ///< (slot, result index)
};

class GraphTask {
 public:
  // Settings of the execute (reuse() sets them); constant while it runs.
  bool keep_graph = false;
  /// As backward(): every reachable node runs, so leaves accumulate into
  /// grad, except the nodes of captured edges, where the gradient is taken
  /// instead. Otherwise, as grad(): only nodes leading to a captured edge run.
  bool accumulate = false;
  /// 0 for a backward called outside the engine, parent's + 1 when reentrant.
  int reentrant_depth = 0;
  /// The queue of the thread that called execute: CPU nodes run there, and
  /// that thread is woken there when the task completes.
  std::shared_ptr<ReadyQueue> cpu_queue;
  /// The execute span: parent of node spans on every thread.
  trace::SpanContext trace_parent;

  /// Every node on the CPU: one thread at a time runs this task's nodes (the
  /// owner, or a pool thread while the owner waits for it), so routing takes
  /// no lock and `outstanding` is counted without read-modify-writes, four
  /// of which a node would otherwise pay (~8 ns each on the GPU machine's
  /// Xeon). Set by the execute before its first task is queued.
  bool serial = false;

  /// Tasks queued and not yet finished; 0 means the graph task is done.
  std::atomic<std::uint64_t> outstanding{0};
  void count_queued() noexcept {
    if (serial) {
      outstanding.store(outstanding.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    } else {
      outstanding.fetch_add(1, std::memory_order_relaxed);
    }
  }
  /// Counts a task finished; returns how many are left.
  std::uint64_t count_finished() noexcept {
    if (serial) {
      const std::uint64_t left = outstanding.load(std::memory_order_relaxed) - 1;
      outstanding.store(left, std::memory_order_release);
      return left;
    }
    return outstanding.fetch_sub(1, std::memory_order_acq_rel) - 1;
  }
  /// Set with the first error; later tasks are skipped.
  std::atomic<bool> has_error{false};
  /// Nodes run, counted only when the execute span is sampled (it reports it).
  std::atomic<std::uint64_t> nodes_run{0};

  /// The edges whose gradients are captured, in result order.
  std::vector<Edge> outputs;
  /// Empty when nothing is captured. Accumulating, it holds only the
  /// captured nodes; otherwise every node reached, `needed` set on those that run.
  NodeMap<ExecInfo> exec_info;

  std::mutex mu;
  // guarded by mu (routing a serial task takes no lock: one thread at a time does it):
  NodeMap<int> dependencies;
  /// Gradients gathered for nodes still waiting for more; a node's buffer is
  /// moved out when it becomes ready.
  NodeMap<InputBuffer> not_ready;
  InputBuffer captured;  ///< one slot per output edge
  std::exception_ptr error;
  std::vector<std::function<void()>> final_callbacks;

  bool done() const noexcept { return outstanding.load(std::memory_order_acquire) == 0; }
  /// Drops what the execute left (gradients, error, callbacks, its queue)
  /// but keeps the tables' memory. Only for a done task no one else holds.
  void clear();
  /// Sets up a new or cleared task for an execute.
  void reuse(bool keep, bool accumulate_leaves, int depth, std::shared_ptr<ReadyQueue> queue,
             trace::SpanContext parent) noexcept;
  /// Keeps the first error (wrapped as BackwardError naming `node`).
  void record_error(const char* node, std::exception_ptr e);
};

}  // namespace glassbox::autograd
