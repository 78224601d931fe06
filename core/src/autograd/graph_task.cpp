#include "glassbox/autograd/graph_task.hpp"

#include "glassbox/autograd/backward_error.hpp"

namespace glassbox::autograd {

void GraphTask::record_error(const char* node, std::exception_ptr e) {
  std::lock_guard lock(mu);
  if (error) return;
  error = std::make_exception_ptr(BackwardError(node, exception_message(e), e));
  has_error.store(true, std::memory_order_release);
}

}  // namespace glassbox::autograd
