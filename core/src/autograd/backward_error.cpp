#include "glassbox/autograd/backward_error.hpp"

namespace glassbox::autograd {

BackwardError::BackwardError(std::string node, const std::string& message, std::exception_ptr cause)
    : Error("backward of '" + node + "' failed: " + message), node_(std::move(node)), cause_(std::move(cause)) {}

std::string exception_message(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    return ex.what();
  } catch (...) {
    return "an exception not derived from std::exception";
  }
}

}  // namespace glassbox::autograd
