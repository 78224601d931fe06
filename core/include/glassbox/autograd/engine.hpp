#pragma once
// The backward engine: runs a graph of Nodes from root edges, as
// torch::autograd::Engine does.
//
// Scheduling: every node runs on the ready queue of its device. CPU nodes run
// on the thread that called execute; each other device has one worker thread,
// started on first use and joined by ~Engine, so a device's nodes never run
// concurrently with each other within one engine.
//
// Reentrancy: execute or execute_reentrant called from inside a node
// (checkpoint) does not block
// its thread; the thread keeps serving its queue until the nested graph task
// is done. Past max_stack_depth nested loops on one thread, the nested task's
// loop continues on a pool thread with a fresh stack while the caller waits,
// so deep nesting neither deadlocks nor overflows the stack.
//
// Thread-safety: execute may be called from any number of threads at once.
// Destroy an engine only when no execute is running.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "glassbox/autograd/edge.hpp"
#include "glassbox/autograd/node.hpp"
#include "glassbox/metrics/registry.hpp"

namespace glassbox::autograd {

struct EngineOptions {
  /// Where metrics go; null means metrics::Registry::global(). Must outlive the engine.
  metrics::Registry* registry = nullptr;
  /// Nested backward loops one thread's stack holds before a pool thread takes over.
  int max_stack_depth = 100;
  /// glassbox_autograd_node_seconds times every node under a sampled span
  /// (its exemplar), and of the others one in about this many, chosen at
  /// random: timing costs two clock reads, which the rest are spared.
  /// 1 times every node.
  std::uint32_t node_timing_interval = 64;
};

class Engine {
 public:
  explicit Engine(EngineOptions options = {});
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  /// The process-wide engine (joined at static destruction).
  static Engine& get_default();
  /// The engine running the calling thread's current node, else get_default().
  static Engine& current();

  /// Backpropagates `grads` (one per root, shapes and devices as the roots
  /// expect) through the graph. With `outputs` empty, every reachable node
  /// runs and the result is empty; otherwise only nodes leading to an output
  /// edge run, and the result holds the gradient arriving at each output edge
  /// (undefined where none arrived). Without keep_graph, nodes free their
  /// saved tensors as they run. Throws BackwardError naming the first node
  /// that failed, glassbox::Error for bad arguments; the engine stays usable.
  /// `roots` must stay as they are until it returns: through their edges
  /// they keep the graph alive, which the running nodes do not.
  TensorList execute(const std::vector<Edge>& roots, TensorList grads, bool keep_graph,
                     const std::vector<Edge>& outputs = {});

  /// For a node whose backward runs a graph of its own (checkpoint's
  /// recomputed segment). Like execute(roots, grads, false, outputs), the
  /// result holds the gradients arriving at `outputs`, where this pass stops;
  /// every other edge the graph reaches gets its gradient as the running
  /// pass gives them: under a backward() every reachable node runs, so leaves
  /// such as weights the segment closes over accumulate into grad; under a
  /// grad() nothing accumulates, and what reaches an edge that grad() asked
  /// for is added to its result. Call it from a running node; elsewhere it
  /// throws glassbox::Error.
  TensorList execute_reentrant(const std::vector<Edge>& roots, TensorList grads, const std::vector<Edge>& outputs);

  /// Runs `callback` on the thread that called execute, after every node of
  /// the current backward pass succeeded. Call it from a node or hook;
  /// elsewhere it throws glassbox::Error.
  static void queue_callback(std::function<void()> callback);

  /// Device worker threads started so far.
  std::size_t device_threads() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace glassbox::autograd
