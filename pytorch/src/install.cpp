#include "glassbox/torch/install.hpp"

#include <atomic>
#include <memory>
#include <mutex>

#include "glassbox/error.hpp"
#include "glassbox/torch/torch_stream_backend.hpp"

namespace glassbox::torch {

namespace {
std::atomic<TorchHostAllocator*> g_installed{nullptr};
std::mutex g_install_mu;

// Never destroyed, as cuda_host_allocator(): pinned memory may still be in
// use by tensors freed during interpreter exit.
host_allocator::CachingHostAllocator& make_allocator() {
  host_allocator::HostAllocatorOptions o;
  auto backend = std::make_shared<TorchStreamBackend>(o.config.use_host_register, o.config.register_threads);
  return *new host_allocator::CachingHostAllocator(std::move(backend), o);
}
}  // namespace

TorchHostAllocator& install() {
  std::lock_guard lock(g_install_mu);
  if (auto* a = g_installed.load()) return *a;
  at::HostAllocator* previous = at::getHostAllocator(at::kCUDA);
  auto* ours = new TorchHostAllocator(make_allocator(), previous);
  // Before registering: the deleter of a block handed out right after reads it.
  g_installed.store(ours);
  at::setHostAllocator(at::kCUDA, ours, kInstallPriority);
  if (at::getHostAllocator(at::kCUDA) != ours) {
    g_installed.store(nullptr);
    delete ours;
    throw Error("glassbox_torch install: at::setHostAllocator(kCUDA, priority " + std::to_string(kInstallPriority) +
                ") left another host allocator in place: one registered at a higher priority");
  }
  return *ours;
}

TorchHostAllocator* installed() noexcept { return g_installed.load(); }

}  // namespace glassbox::torch
