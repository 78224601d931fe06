#include "glassbox/cudnn/sim_cudnn_backend.hpp"

#include <atomic>
#include <cstdlib>
#include <new>
#include <string>

#include "glassbox/error.hpp"
#include "glassbox/sim/injected_fault.hpp"

namespace glassbox::cudnn {

struct SimCudnnBackend::Shared {
  SimCudnnOptions options;
  sim::FakeHandleFactory handles;
  std::shared_ptr<InlinePool> inline_pool;
  std::atomic<std::size_t> streams{0};
  std::atomic<std::size_t> state_handles{0};
  std::atomic<std::size_t> blocks{0};
  std::atomic<std::size_t> bytes{0};
  std::atomic<int> fail_streams{0};
  std::atomic<int> fail_allocations{0};
};

namespace {

// Device memory is at least this aligned; cuDNN relies on it for workspaces.
constexpr std::size_t kAlignment = 256;

sim::FakeHandleFactory cudnn_factory(int device_count) {
  auto state = std::make_shared<sim::FakeHandleState>();
  state->device_count = device_count;
  return sim::FakeHandleFactory("cudnn", std::move(state));
}

}  // namespace

SimCudnnBackend::SimCudnnBackend(SimCudnnOptions options, metrics::Registry& registry)
    : shared_(std::make_shared<Shared>()) {
  shared_->options = options;
  // One factory for state and pooled handles, so every fake handle id is distinct.
  shared_->handles = cudnn_factory(options.device_count);
  shared_->inline_pool = InlinePool::create(shared_->handles, registry);
}

int SimCudnnBackend::device_count() const noexcept { return shared_->options.device_count; }

SimCudnnBackend::stream_type SimCudnnBackend::create_stream(int device) {
  if (sim::take_fault(shared_->fail_streams)) {
    throw BackendError("sim cudnn: stream creation failed on device " + std::to_string(device) + " (injected)");
  }
  auto* s = new sim::SimStream(shared_->options.state_streams, "cudnn-state-d" + std::to_string(device));
  shared_->streams.fetch_add(1, std::memory_order_relaxed);
  return s;
}

void SimCudnnBackend::destroy_stream(int, stream_type stream) noexcept {
  delete stream;
  shared_->streams.fetch_sub(1, std::memory_order_relaxed);
}

SimCudnnBackend::handle_type SimCudnnBackend::create_handle(int device, stream_type) {
  handle_type h = shared_->handles.create(device);
  shared_->state_handles.fetch_add(1, std::memory_order_relaxed);
  return h;
}

void SimCudnnBackend::destroy_handle(int device, handle_type handle) noexcept {
  shared_->handles.destroy(device, handle);
  shared_->state_handles.fetch_sub(1, std::memory_order_relaxed);
}

SimCudnnBackend::handle_type SimCudnnBackend::inline_handle(int device, stream_type) {
  return shared_->inline_pool->reserve(device);
}

void* SimCudnnBackend::allocate(int device, std::size_t bytes, stream_type) {
  if (sim::take_fault(shared_->fail_allocations)) {
    throw BackendError("sim cudnn: workspace allocation of " + std::to_string(bytes) + " bytes failed on device " +
                       std::to_string(device) + " (injected)");
  }
  std::size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  void* p = std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded);
  if (p == nullptr) throw std::bad_alloc();
  shared_->blocks.fetch_add(1, std::memory_order_relaxed);
  shared_->bytes.fetch_add(bytes, std::memory_order_relaxed);
  return p;
}

// The block rides on the stream inside an empty work item: it is freed when
// the stream has run up to that item, or drops it.
void SimCudnnBackend::deallocate(int, void* block, std::size_t bytes, stream_type stream) noexcept {
  std::shared_ptr<void> held(block, [shared = shared_, bytes](void* p) {
    std::free(p);
    shared->blocks.fetch_sub(1, std::memory_order_relaxed);
    shared->bytes.fetch_sub(bytes, std::memory_order_relaxed);
  });
  stream->enqueue([held = std::move(held)] {});
}

std::atomic<int>& SimCudnnBackend::fail_stream_creations() noexcept { return shared_->fail_streams; }
std::atomic<int>& SimCudnnBackend::fail_handle_creations() noexcept {
  return shared_->handles.state()->failures_to_inject;
}
std::atomic<int>& SimCudnnBackend::fail_workspace_allocations() noexcept { return shared_->fail_allocations; }

SimCudnnLive SimCudnnBackend::live() const {
  return {shared_->streams.load(), shared_->state_handles.load(), shared_->blocks.load(), shared_->bytes.load()};
}

const SimCudnnBackend::InlinePool& SimCudnnBackend::handle_pool() const noexcept { return *shared_->inline_pool; }

}  // namespace glassbox::cudnn
