// "No GPU" against "a GPU that is there but unusable": how cudaGetDeviceCount's
// answer is read, and what the GPU suites do on each kind of machine. The
// machines are made with a fake CUDA driver (fake_cuda_driver.cpp) whose
// cuInit fails as asked, put first on the library path of a GPU suite run as
// a child process, so these run the same on a machine with or without a GPU.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "glassbox/cuda/cuda_check.hpp"
#include "run_command.hpp"

namespace fs = std::filesystem;
namespace gcu = glassbox::cuda;
using gcu::DevicePresence;

namespace {

TEST(DevicePresence, ReadsTheDeviceCountStatus) {
  EXPECT_EQ(gcu::classify_device_count(cudaSuccess, 13000), DevicePresence::present);
  // No GPU: no driver at all (the runtime says "insufficient", the version is 0),
  // the toolkit's stub driver, or a driver that sees no device.
  EXPECT_EQ(gcu::classify_device_count(cudaErrorInsufficientDriver, 0), DevicePresence::none);
  EXPECT_EQ(gcu::classify_device_count(cudaErrorStubLibrary, 0), DevicePresence::none);
  EXPECT_EQ(gcu::classify_device_count(cudaErrorNoDevice, 13000), DevicePresence::none);
  // A GPU machine that cannot use its GPU.
  EXPECT_EQ(gcu::classify_device_count(cudaErrorInsufficientDriver, 12020), DevicePresence::unusable);
  EXPECT_EQ(gcu::classify_device_count(cudaErrorInitializationError, 13000), DevicePresence::unusable);
  EXPECT_EQ(gcu::classify_device_count(cudaErrorSystemDriverMismatch, 13000), DevicePresence::unusable);
  EXPECT_EQ(gcu::classify_device_count(cudaErrorDevicesUnavailable, 13000), DevicePresence::unusable);
  EXPECT_EQ(gcu::classify_device_count(cudaErrorUnknown, 13000), DevicePresence::unusable);
}

// The folder of this test's executable: the build tree's bin/, or a GPU bundle's.
fs::path own_folder() { return fs::read_symlink("/proc/self/exe").parent_path(); }

// Runs one GPU suite test on a machine whose driver's cuInit returns `status`.
glassbox::testing::CommandResult gpu_suite_with_driver(int status, bool require_gpu) {
  const fs::path driver = own_folder().parent_path() / "lib/fake-cuda-driver";
  const fs::path suite = own_folder() / "glassbox-test-gpu-handles";
  const char* library_path = std::getenv("LD_LIBRARY_PATH");
  return glassbox::testing::run_command(
      "env GLASSBOX_REQUIRE_GPU=" + std::string(require_gpu ? "1" : "0") +
      " GLASSBOX_FAKE_CUINIT_STATUS=" + std::to_string(status) + " LD_LIBRARY_PATH='" + driver.string() +
      (library_path != nullptr ? std::string(":") + library_path : "") + "' '" + suite.string() +
      "' --gtest_filter=GpuHandles.ADeviceBeyondTheLastIsAClearError");
}

constexpr int kNoDevice = 100;        // CUDA_ERROR_NO_DEVICE
constexpr int kNotInitialized = 3;    // CUDA_ERROR_NOT_INITIALIZED
constexpr int kDriverMismatch = 803;  // CUDA_ERROR_SYSTEM_DRIVER_MISMATCH

TEST(DevicePresence, ADriverThatSeesNoDeviceSkipsTheGpuSuites) {
  auto r = gpu_suite_with_driver(kNoDevice, false);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("[  SKIPPED ] 1 test"), std::string::npos) << r.output;
}

TEST(DevicePresence, WhereAGpuIsRequiredNoDeviceFailsTheGpuSuites) {
  auto r = gpu_suite_with_driver(kNoDevice, true);
  EXPECT_NE(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("GLASSBOX_REQUIRE_GPU=1, but cudaGetDeviceCount finds no CUDA device"), std::string::npos)
      << r.output;
}

TEST(DevicePresence, AnInstalledDriverThatFailsFailsTheGpuSuitesAndSaysWhy) {
  for (int status : {kNotInitialized, kDriverMismatch}) {
    auto r = gpu_suite_with_driver(status, false);
    EXPECT_NE(r.status, 0) << r.output;
    EXPECT_NE(r.output.find("a CUDA driver is installed (version 13.0) but unusable"), std::string::npos) << r.output;
  }
}

}  // namespace
