#include "glassbox/autograd/engine_metrics.hpp"

#include "glassbox/autograd/device.hpp"
#include "node_seconds.hpp"

namespace glassbox::autograd {

DeviceMetrics DeviceMetrics::resolve(metrics::Registry& r, int device) {
  std::string dev = device_name(device);
  return DeviceMetrics{
      r.counter("glassbox_autograd_nodes_executed_total", "Backward nodes run, by the device they ran on", {"device"})
          .with({dev}),
      r.up_down_counter("glassbox_autograd_ready_queue_depth", "Backward node tasks waiting in ready queues",
                        {"device"})
          .with({dev}),
      std::make_shared<NodeSeconds>(r, dev),
  };
}

EngineMetrics EngineMetrics::resolve(metrics::Registry& r) {
  return EngineMetrics{
      r.histogram("glassbox_autograd_backward_seconds", "Duration of one backward pass (Engine::execute)", {},
                  metrics::exponential_buckets(1e-6, 4, 12))
          .with(),
      r.gauge("glassbox_autograd_reentrant_depth_max", "Deepest nesting of reentrant backward passes seen").with(),
      r.counter("glassbox_autograd_errors_total", "Backward passes that ended in an error").with(),
      DeviceMetrics::resolve(r, kCpu),
  };
}

}  // namespace glassbox::autograd
