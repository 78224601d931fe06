#pragma once
// What a failed backward pass throws: names the node whose backward failed
// and keeps the original exception.
#include <exception>
#include <string>

#include "glassbox/error.hpp"

namespace glassbox::autograd {

class BackwardError : public Error {
 public:
  BackwardError(std::string node, const std::string& message, std::exception_ptr cause);
  /// The failing node's name(); with nested (reentrant) backward passes, the
  /// outermost one's, and cause() leads to the inner error.
  const std::string& node() const noexcept { return node_; }
  std::exception_ptr cause() const noexcept { return cause_; }

 private:
  std::string node_;
  std::exception_ptr cause_;
};

/// what() of the exception in `e` (or a note that it is not a std::exception).
std::string exception_message(const std::exception_ptr& e);

}  // namespace glassbox::autograd
