#include "glassbox/autograd/device_kernels.hpp"

#include <atomic>
#include <string>

#include "glassbox/error.hpp"

namespace glassbox::autograd {

namespace {
std::atomic<DeviceKernels*> installed{nullptr};
}  // namespace

void install_device_kernels(DeviceKernels& kernels) {
  DeviceKernels* expected = nullptr;
  if (installed.compare_exchange_strong(expected, &kernels, std::memory_order_acq_rel)) return;
  if (expected != &kernels) {
    throw Error(std::string("install_device_kernels: ") + expected->name() +
                " kernels are installed already; one implementation per process");
  }
}

DeviceKernels* installed_device_kernels() noexcept { return installed.load(std::memory_order_acquire); }

}  // namespace glassbox::autograd
