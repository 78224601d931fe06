#include "glassbox/handle_pool/workspace_table.hpp"

namespace glassbox::handle_pool {

WorkspaceTable::WorkspaceTable(std::string library, std::size_t bytes, Memory memory, metrics::Registry& registry)
    : library_(std::move(library)), bytes_(bytes), memory_(std::move(memory)), registry_(registry) {}

WorkspaceTable::~WorkspaceTable() {
  release_idle([](int, Handle) { return true; });
}

metrics::Gauge& WorkspaceTable::gauge(int device) {
  auto it = gauges_.find(device);
  if (it != gauges_.end()) return it->second;
  auto g = registry_
               .gauge("glassbox_handle_workspace_bytes",
                      "Bytes of library workspace held per (handle, stream); release_idle frees idle ones",
                      {"library", "device"})
               .with({library_, std::to_string(device)});
  return gauges_.emplace(device, g).first->second;
}

void* WorkspaceTable::bind(Handle handle, Stream stream, int device) {
  std::lock_guard lock(mu_);
  auto it = spaces_.find({handle, stream});
  if (it == spaces_.end()) {
    void* ptr = memory_.allocate(device, bytes_);  // under the lock: one workspace per key, however many race
    it = spaces_.emplace(std::pair{handle, stream}, Space{device, ptr}).first;
    held_[device] += bytes_;
    gauge(device).add(static_cast<double>(bytes_));
  }
  bound_[handle] = stream;
  return it->second.ptr;
}

std::size_t WorkspaceTable::release_idle(const Idle& handle_idle) {
  std::lock_guard lock(mu_);
  std::size_t freed = 0;
  for (auto it = spaces_.begin(); it != spaces_.end();) {
    const auto [handle, stream] = it->first;
    const Space space = it->second;
    auto bound = bound_.find(handle);
    const bool in_use = bound != bound_.end() && bound->second == stream && !handle_idle(space.device, handle);
    if (in_use) {
      ++it;
      continue;
    }
    memory_.free(space.device, space.ptr);
    it = spaces_.erase(it);
    held_[space.device] -= bytes_;
    gauge(space.device).sub(static_cast<double>(bytes_));
    freed += bytes_;
  }
  return freed;
}

std::size_t WorkspaceTable::bytes(int device) const {
  std::lock_guard lock(mu_);
  auto it = held_.find(device);
  return it == held_.end() ? 0 : it->second;
}

}  // namespace glassbox::handle_pool
