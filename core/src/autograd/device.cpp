#include "glassbox/autograd/device.hpp"

namespace glassbox::autograd {

std::string device_name(int device) { return device == kCpu ? "cpu" : std::to_string(device); }

}  // namespace glassbox::autograd
