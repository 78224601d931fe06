#include "glassbox/cudnn/cudnn_states.hpp"

#include <cstdlib>
#include <string>

#include "glassbox/error.hpp"

namespace glassbox::cudnn {

namespace {

constexpr int kMaxStatesPerDevice = 1024;
constexpr const char* kStatesVariable = "GLASSBOX_CUDNN_STATES_PER_DEVICE";

int parse_states_per_device(const std::string& v) {
  bool digits = !v.empty() && v.size() <= 4 && v.find_first_not_of("0123456789") == std::string::npos;
  int n = digits ? std::stoi(v) : 0;
  if (n < 1 || n > kMaxStatesPerDevice) {
    throw ConfigError(std::string(kStatesVariable) + "='" + v + "' is not accepted; expected an integer from 1 to " +
                      std::to_string(kMaxStatesPerDevice) + " (cuDNN states per device; default 4)");
  }
  return n;
}

}  // namespace

CudnnStatesOptions CudnnStatesOptions::from_env() {
  CudnnStatesOptions options;
  if (const char* v = std::getenv(kStatesVariable)) options.states_per_device = parse_states_per_device(v);
  return options;
}

namespace detail {

void check_options(const CudnnStatesOptions& options) {
  if (options.states_per_device < 1 || options.states_per_device > kMaxStatesPerDevice) {
    throw ConfigError("glassbox cuDNN wrapper: states_per_device=" + std::to_string(options.states_per_device) +
                      " is not accepted; expected 1 to " + std::to_string(kMaxStatesPerDevice));
  }
  if (options.wait_clock == nullptr) throw ConfigError("glassbox cuDNN wrapper: wait_clock is null");
}

void throw_bad_device(int device, int device_count) {
  throw ConfigError("glassbox cuDNN wrapper: device " + std::to_string(device) +
                    " is out of range; accepted devices are 0.." + std::to_string(device_count - 1) + " (" +
                    std::to_string(device_count) + " device(s) found)");
}

void throw_bad_index(int device, int index, int states_per_device) {
  throw ConfigError("glassbox cuDNN wrapper: state index " + std::to_string(index) + " is out of range on device " +
                    std::to_string(device) + "; accepted indices are 0.." + std::to_string(states_per_device - 1) +
                    " (" + std::to_string(states_per_device) + " states per device; raise it with " + kStatesVariable +
                    " or CudnnStatesOptions::states_per_device)");
}

}  // namespace detail

}  // namespace glassbox::cudnn
