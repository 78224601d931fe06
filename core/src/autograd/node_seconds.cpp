#include "node_seconds.hpp"

#include <array>
#include <atomic>

namespace glassbox::autograd {

namespace {
std::uint64_t next_serial() {
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

// The series a thread found last, by instance and name address. Without it
// every thread timing nodes of one device's engine (one node in 64 by
// default) took the instance's one lock; a series found once stays where it
// is (by_address_ never erases), so a thread need not ask again.
struct Memo {
  static constexpr std::size_t kSlots = 8;
  struct Slot {
    std::uint64_t owner = 0;
    const char* name = nullptr;
    const metrics::Histogram* series = nullptr;
  };
  std::array<Slot, kSlots> slots{};
  Slot& slot(const char* name) noexcept { return slots[(reinterpret_cast<std::uintptr_t>(name) >> 3) % kSlots]; }
};
thread_local constinit Memo tl_memo;
}  // namespace

NodeSeconds::NodeSeconds(metrics::Registry& registry, std::string device)
    : serial_(next_serial()),
      family_(registry.histogram("glassbox_autograd_node_seconds",
                                 "Duration of one backward node, by its type name and device", {"node", "device"},
                                 metrics::exponential_buckets(1e-6, 4, 12))),
      device_(std::move(device)) {}

const metrics::Histogram& NodeSeconds::of(const char* name) {
  Memo::Slot& memo = tl_memo.slot(name);
  if (memo.owner == serial_ && memo.name == name) return *memo.series;
  const metrics::Histogram* series = nullptr;
  {
    std::lock_guard lock(mu_);
    series = &find(name);
  }
  memo = {serial_, name, series};
  return *series;
}

const metrics::Histogram& NodeSeconds::find(const char* name) {
  if (auto it = by_address_.find(name); it != by_address_.end()) return it->second;
  // The same name may sit at two addresses (a literal in two libraries): one series, one place in the cap.
  std::string_view label = name;
  if (!names_.contains(label)) {
    if (names_.size() >= kMaxNodeNames) {
      if (!other_) other_ = family_.with({kOther, device_});
      return by_address_.emplace(name, *other_).first->second;
    }
    names_.emplace(label);
  }
  return by_address_.emplace(name, family_.with({label, device_})).first->second;
}

}  // namespace glassbox::autograd
