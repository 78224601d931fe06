#include "glassbox/host_allocator/detail/biased_lock.hpp"

#include <cstdlib>
#include <exception>
#include <string_view>

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace glassbox::host_allocator::detail {

namespace {
long membarrier(int command) noexcept { return ::syscall(SYS_membarrier, command, 0U, 0); }
}  // namespace

bool membarrier_turned_off() noexcept {
  const char* v = std::getenv("GLASSBOX_NO_MEMBARRIER");
  return v != nullptr && *v != '\0' && std::string_view(v) != "0";
}

bool register_membarrier() noexcept {
  const long commands = membarrier(MEMBARRIER_CMD_QUERY);
  if (commands < 0 || (commands & MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return false;
  return membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
}

void heavy_fence() noexcept {
  // Registration succeeded before any owner relied on it, and registered
  // processes get no documented error; if one came anyway, owners would race
  // with this remote: stop rather than corrupt a cache.
  if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0) std::terminate();
}

}  // namespace glassbox::host_allocator::detail
