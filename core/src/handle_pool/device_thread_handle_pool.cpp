#include "glassbox/handle_pool/device_thread_handle_pool.hpp"

namespace glassbox::handle_pool::detail {

std::uint64_t next_pool_id() noexcept {
  static std::atomic<std::uint64_t> next{1};  // 0 marks "no pool" in the thread-local cache
  return next.fetch_add(1, std::memory_order_relaxed);
}

void throw_bad_device(const std::string& library, int device, int count) {
  throw ConfigError("glassbox handle pool (" + library + "): device " + std::to_string(device) +
                    " is out of range; accepted devices are 0.." + std::to_string(count - 1) + " (" +
                    std::to_string(count) + " device(s) found)");
}

void throw_after_thread_exit(const std::string& library) {
  throw Error("glassbox handle pool (" + library +
              "): reserve() called while this thread's thread-local storage is being destroyed; "
              "reserve handles before thread exit");
}

}  // namespace glassbox::handle_pool::detail
