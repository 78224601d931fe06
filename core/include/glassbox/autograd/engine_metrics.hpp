#pragma once
// The engine's metric series (DESIGN.md), resolved once per engine and device
// so the per-node cost is a relaxed per-thread add.
#include <memory>

#include "glassbox/metrics/registry.hpp"

namespace glassbox::autograd {

class NodeSeconds;  // core/src/autograd/node_seconds.hpp

struct DeviceMetrics {
  metrics::Counter nodes_executed;            ///< glassbox_autograd_nodes_executed_total{device}
  metrics::UpDownCounter queue_depth;         ///< glassbox_autograd_ready_queue_depth{device}
  std::shared_ptr<NodeSeconds> node_seconds;  ///< glassbox_autograd_node_seconds{node,device}
  static DeviceMetrics resolve(metrics::Registry& registry, int device);
};

struct EngineMetrics {
  metrics::Histogram backward_seconds;  ///< glassbox_autograd_backward_seconds
  metrics::Gauge reentrant_depth_max;   ///< glassbox_autograd_reentrant_depth_max
  metrics::Counter errors;              ///< glassbox_autograd_errors_total
  DeviceMetrics cpu;
  static EngineMetrics resolve(metrics::Registry& registry);
};

}  // namespace glassbox::autograd
