#pragma once
// glassbox_autograd_node_seconds{node,device}: how long each kind of backward
// node takes, by its type name ("MulBackward"). The names come from a fixed
// set of node classes, but a service may define node classes of its own, so
// the series are capped: past kMaxNodeNames names on one device, the rest
// share the series node="other", which counts them.
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "glassbox/metrics/registry.hpp"

namespace glassbox::autograd {

class NodeSeconds {
 public:
  static constexpr std::size_t kMaxNodeNames = 64;
  static constexpr const char* kOther = "other";

  NodeSeconds(metrics::Registry& registry, std::string device);

  /// The series of nodes named `name` (a node's static name()). The calling
  /// thread remembers the series it found last for a few names; only a name
  /// it has not met (or evicted) takes the lock.
  const metrics::Histogram& of(const char* name);

 private:
  const metrics::Histogram& find(const char* name);  // under mu_

  // Tells instances apart in the threads' memos: never reused, where an
  // address may be once an engine is gone.
  const std::uint64_t serial_;
  metrics::Family<metrics::Histogram>& family_;
  std::string device_;
  std::mutex mu_;
  std::map<const char*, metrics::Histogram> by_address_;  // name() returns a static string
  std::set<std::string, std::less<>> names_;              // distinct names given a series of their own
  std::optional<metrics::Histogram> other_;
};

}  // namespace glassbox::autograd
