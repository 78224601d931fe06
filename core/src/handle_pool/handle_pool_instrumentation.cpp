#include "glassbox/handle_pool/handle_pool_instrumentation.hpp"

#include <map>
#include <memory>
#include <mutex>

namespace glassbox::handle_pool {

namespace {

// Registered once per library; the map's nodes never move, so the names' text stays valid.
const nvtx::RegisteredName& creation_range_name(const std::string& library) {
  static std::mutex mu;
  static auto* names = new std::map<std::string, std::unique_ptr<nvtx::RegisteredName>>;
  static auto* texts = new std::map<std::string, std::string>;
  std::lock_guard lock(mu);
  auto it = names->find(library);
  if (it != names->end()) return *it->second;
  const std::string& text = (*texts)[library] = "glassbox.handle_pool.create:" + library;
  return *names->emplace(library, std::make_unique<nvtx::RegisteredName>(text.c_str())).first->second;
}

}  // namespace

PoolSeries PoolSeries::resolve(metrics::Registry& r, const std::string& library, int device) {
  const std::vector<std::string> labels{"library", "device"};
  std::string dev = std::to_string(device);
  return PoolSeries{
      r.counter("glassbox_handles_created_total", "Library handles created by the device/thread handle pool", labels)
          .with({library, dev}),
      r.gauge("glassbox_handles_in_use", "Handles lent to live threads", labels).with({library, dev}),
      r.gauge("glassbox_handles_available", "Handles created and waiting in the pool for a thread", labels)
          .with({library, dev}),
      r.gauge("glassbox_handles_high_water_mark",
              "Most handles ever in use at once; the pool never creates more than this", labels)
          .with({library, dev}),
      r.histogram("glassbox_handle_create_seconds", "Time to create one library handle", labels,
                  metrics::exponential_buckets(1e-6, 4, 12))
          .with({library, dev}),
      trace::CounterTrack("glassbox.handles_in_use{library=" + library + ",device=" + dev + "}"),
  };
}

CreationScope::CreationScope(const std::string& library, int device)
    : range_(creation_range_name(library), nvtx::Category::handle_pool), span_("glassbox.handle_pool.create") {
  span_.set_attribute("glassbox.library", library).set_attribute("glassbox.device", device);
}

void CreationScope::succeeded(const PoolSeries& series) noexcept {
  std::chrono::duration<double> took = std::chrono::steady_clock::now() - start_;
  series.create_seconds.observe(took.count());
  span_.set_status(trace::StatusCode::ok);
}

void CreationScope::failed(const char* what) noexcept { span_.set_status(trace::StatusCode::error, what); }

}  // namespace glassbox::handle_pool
