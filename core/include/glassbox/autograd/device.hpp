#pragma once
// Devices as the engine sees them: an index, -1 for the CPU. In this phase a
// device is a scheduling domain (its own ready queue and worker thread);
// tensor data always lives in host memory.
#include <string>

namespace glassbox::autograd {

inline constexpr int kCpu = -1;
/// Device indices accepted by the engine are kCpu and 0..kMaxDevices-1.
inline constexpr int kMaxDevices = 32;

/// "cpu" or the index ("0", "1"): the form metric labels and messages use.
std::string device_name(int device);

}  // namespace glassbox::autograd
