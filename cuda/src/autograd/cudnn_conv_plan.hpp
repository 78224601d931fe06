#pragma once
// A convolution as cuDNN's graph (backend) API runs it: an execution plan
// built once for a direction, shapes and handle, then executed with each
// call's pointers. cuDNN 9's legacy cudnnConvolution* entry points build such
// a plan again inside every call: on an H100 that was 24-54 us of host time a
// call against 5-8 us to execute a built plan, same shapes, same results
// (session 11's probe, bench/RESULTS.md); PyTorch executes cached plans too.
#include <cudnn.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "glassbox/autograd/device_kernels.hpp"

namespace glassbox::cuda::detail {

enum class ConvDirection { forward, backward_data, backward_filter };

/// One backend descriptor, destroyed with it. Setters throw BackendError
/// naming the attribute that cuDNN refused.
class Descriptor {
 public:
  explicit Descriptor(cudnnBackendDescriptorType_t type);
  ~Descriptor();
  Descriptor(Descriptor&& other) noexcept : d_(std::exchange(other.d_, nullptr)) {}
  Descriptor& operator=(Descriptor&&) = delete;

  cudnnBackendDescriptor_t get() const noexcept { return d_; }
  Descriptor& set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, std::int64_t count,
                  const void* values);
  /// Throws unless `or_false`: then a refusal (an engine that cannot run these shapes) is false.
  bool finalize(bool or_false = false);

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
};

/// A built plan. FP32 NCHW tensors, no engine that rounds inputs down to
/// TF32 or runs on tensor cores, so results match the CPU reference to float
/// rounding, as the legacy path's FMA math did.
class ConvPlan {
 public:
  /// Asks cuDNN's heuristics (mode A, then its fallback list) and keeps the
  /// first engine configuration that builds. Throws BackendError naming the
  /// call that failed, or Error when no configuration builds.
  static std::shared_ptr<const ConvPlan> build(cudnnHandle_t handle, ConvDirection direction,
                                               const autograd::Conv2dGeometry& g);
  ConvPlan(std::vector<Descriptor> parts, std::size_t workspace_bytes) noexcept
      : parts_(std::move(parts)), workspace_bytes_(workspace_bytes) {}

  std::size_t workspace_bytes() const noexcept { return workspace_bytes_; }

  /// Queues the convolution on `handle`'s stream. `x`, `w` and `y` are the
  /// forward's input, filter and output in every direction; the direction's
  /// result is written (y forward, x backward_data, w backward_filter), the
  /// others read. `workspace` holds workspace_bytes().
  void execute(cudnnHandle_t handle, const void* x, const void* w, const void* y, void* workspace) const;

 private:
  // Everything the plan was built from, the plan last: kept for its life,
  // since a plan may refer to its engine configuration and graph.
  std::vector<Descriptor> parts_;
  std::size_t workspace_bytes_;
};

}  // namespace glassbox::cuda::detail
