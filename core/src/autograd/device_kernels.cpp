#include "glassbox/autograd/device_kernels.hpp"

#include <atomic>
#include <string>

#include "glassbox/autograd/tensor.hpp"
#include "glassbox/error.hpp"

namespace glassbox::autograd {

namespace {
std::atomic<DeviceKernels*> installed{nullptr};
}  // namespace

void install_device_kernels(DeviceKernels& kernels) {
  if (installed.load(std::memory_order_acquire) == &kernels) return;
  // Ops pick host loops or device kernels by where an input's data is and
  // make outputs where the device keeps tensors: one tensor of each kind in
  // one op would hand host memory to device kernels.
  if (std::int64_t n = Storage::host_memory_on_devices(); n > 0) {
    throw Error(std::string("install_device_kernels: ") + std::to_string(n) +
                " tensor storage(s) on devices are alive in host memory; install " + kernels.name() +
                " kernels (use_cuda()) before making any device tensor");
  }
  DeviceKernels* expected = nullptr;
  if (installed.compare_exchange_strong(expected, &kernels, std::memory_order_acq_rel)) return;
  if (expected != &kernels) {
    throw Error(std::string("install_device_kernels: ") + expected->name() +
                " kernels are installed already; one implementation per process");
  }
}

DeviceKernels* installed_device_kernels() noexcept { return installed.load(std::memory_order_acquire); }

}  // namespace glassbox::autograd
