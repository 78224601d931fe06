#include "node_seconds.hpp"

namespace glassbox::autograd {

NodeSeconds::NodeSeconds(metrics::Registry& registry, std::string device)
    : family_(registry.histogram("glassbox_autograd_node_seconds",
                                 "Duration of one backward node, by its type name and device", {"node", "device"},
                                 metrics::exponential_buckets(1e-6, 4, 12))),
      device_(std::move(device)) {}

const metrics::Histogram& NodeSeconds::of(const char* name) {
  std::lock_guard lock(mu_);
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
