#pragma once
// Whether ops record a graph on the calling thread (thread-local, on by
// default). The engine runs backward functions with it off; checkpoint turns
// it on to recompute its segment.
namespace glassbox::autograd {

class GradMode {
 public:
  static bool is_enabled() noexcept;
  static void set_enabled(bool enabled) noexcept;
};

/// Sets grad mode for its lifetime, then restores what was set before.
class GradModeGuard {
 public:
  explicit GradModeGuard(bool enabled) noexcept : previous_(GradMode::is_enabled()) { GradMode::set_enabled(enabled); }
  ~GradModeGuard() { GradMode::set_enabled(previous_); }
  GradModeGuard(const GradModeGuard&) = delete;
  GradModeGuard& operator=(const GradModeGuard&) = delete;

 private:
  bool previous_;
};

/// Turns recording off for its lifetime, like torch.no_grad().
class NoGradGuard : public GradModeGuard {
 public:
  NoGradGuard() noexcept : GradModeGuard(false) {}
};

}  // namespace glassbox::autograd
