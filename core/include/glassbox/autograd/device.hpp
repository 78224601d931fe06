#pragma once
// Devices as the engine sees them: an index, -1 for the CPU. A device is a
// scheduling domain (its own ready queue and worker thread); where its data
// lives is the installed device kernels' business (tensor.hpp): GPU memory
// with glassbox::cuda's, host memory when none are installed.
#include <string>

namespace glassbox::autograd {

inline constexpr int kCpu = -1;
/// Device indices accepted by the engine are kCpu and 0..kMaxDevices-1.
inline constexpr int kMaxDevices = 32;

/// "cpu" or the index ("0", "1"): the form metric labels and messages use.
std::string device_name(int device);

}  // namespace glassbox::autograd
