#include "glassbox/autograd/grad_mode.hpp"

namespace glassbox::autograd {

namespace {
thread_local bool grad_enabled = true;
}

bool GradMode::is_enabled() noexcept { return grad_enabled; }
void GradMode::set_enabled(bool enabled) noexcept { grad_enabled = enabled; }

}  // namespace glassbox::autograd
