#pragma once
// The three computations of a 2-d convolution (forward, gradient of the
// input, gradient of the weight), each taking the geometry and raw spans so
// that one device's implementation can replace another's without touching the
// op or its backward node: conv2d_kernels(device) is the only place that picks.
#include <cstdint>
#include <span>

#include "glassbox/autograd/device_kernels.hpp"

namespace glassbox::autograd::detail {

using autograd::Conv2dGeometry;

struct Conv2dKernels {
  /// y = conv(x, weight) + bias; `bias` empty for none. `y` starts zeroed.
  void (*forward)(const Conv2dGeometry& g, std::span<const float> x, std::span<const float> weight,
                  std::span<const float> bias, std::span<float> y);
  /// gx += d(y)/d(x)^T gy. `gx` starts zeroed.
  void (*backward_input)(const Conv2dGeometry& g, std::span<const float> gy, std::span<const float> weight,
                         std::span<float> gx);
  /// gweight += d(y)/d(weight)^T gy and, when `gbias` is not empty, gbias += sum of gy per channel.
  void (*backward_weight)(const Conv2dGeometry& g, std::span<const float> gy, std::span<const float> x,
                          std::span<float> gweight, std::span<float> gbias);
};

/// The direct-loop CPU reference.
const Conv2dKernels& conv2d_cpu_kernels() noexcept;

/// The kernels for tensors in host memory (on any device index). Tensors in
/// device memory go to the installed DeviceKernels instead (see ops_conv.cpp).
inline const Conv2dKernels& conv2d_kernels(int /*device*/) noexcept { return conv2d_cpu_kernels(); }

}  // namespace glassbox::autograd::detail
