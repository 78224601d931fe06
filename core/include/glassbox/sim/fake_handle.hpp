#pragma once
// A handle factory for the sim backend: handles are numbers, creation can be
// slowed or made to fail, and every live handle is tracked, so tests and the
// CPU-only demo exercise the handle pool exactly as with cuBLAS or cuDNN.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>

namespace glassbox::sim {

struct FakeHandleState {
  int device_count = 1;
  std::chrono::nanoseconds create_latency{0};
  std::atomic<int> failures_to_inject{0};  ///< the next N creations throw
  std::atomic<std::uint64_t> next_id{1};
  std::mutex mu;
  std::set<std::uint64_t> live;  ///< created and not yet destroyed
  std::uint64_t created = 0;
  std::uint64_t destroyed = 0;
};

class FakeHandleFactory {
 public:
  using handle_type = std::uint64_t;

  explicit FakeHandleFactory(std::string library = "fake", std::shared_ptr<FakeHandleState> state = nullptr)
      : library_(std::move(library)), state_(state ? std::move(state) : std::make_shared<FakeHandleState>()) {}

  std::string library() const { return library_; }
  int device_count() const { return state_->device_count; }
  handle_type create(int device);
  void destroy(int device, handle_type h) noexcept;
  const std::shared_ptr<FakeHandleState>& state() const noexcept { return state_; }

 private:
  std::string library_;
  std::shared_ptr<FakeHandleState> state_;
};

}  // namespace glassbox::sim
