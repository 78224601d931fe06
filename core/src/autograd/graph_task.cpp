#include "glassbox/autograd/graph_task.hpp"

#include "glassbox/autograd/backward_error.hpp"

namespace glassbox::autograd {

void GraphTask::record_error(const char* node, std::exception_ptr e) {
  std::lock_guard lock(mu);
  if (error) return;
  error = std::make_exception_ptr(BackwardError(node, exception_message(e), e));
  has_error.store(true, std::memory_order_release);
}

void GraphTask::clear() {
  cpu_queue.reset();  // `outstanding` is 0 already: the task is done
  has_error.store(false, std::memory_order_relaxed);
  nodes_run.store(0, std::memory_order_relaxed);
  outputs.clear();
  exec_info.clear();
  dependencies.clear();
  not_ready.clear();
  captured = InputBuffer();
  error = nullptr;
  final_callbacks.clear();
}

void GraphTask::reuse(bool keep, bool accumulate_leaves, int depth, std::shared_ptr<ReadyQueue> queue,
                      trace::SpanContext parent) noexcept {
  keep_graph = keep;
  accumulate = accumulate_leaves;
  reentrant_depth = depth;
  cpu_queue = std::move(queue);
  trace_parent = parent;
}

}  // namespace glassbox::autograd
