// A build without CUDA says so when asked for CUDA tensors, and device
// indices stay host-memory scheduling domains.
#include <gtest/gtest.h>

#include <string>

#include "glassbox/autograd/device_kernels.hpp"
#include "glassbox/autograd/ops.hpp"
#include "glassbox/autograd/use_cuda.hpp"
#include "glassbox/error.hpp"

namespace ga = glassbox::autograd;

TEST(AutogradWithoutCuda, UseCudaThrowsThatCudaWasNotBuilt) {
  try {
    ga::use_cuda();
    FAIL() << "use_cuda() returned in a build without CUDA";
  } catch (const glassbox::Error& e) {
    EXPECT_NE(std::string(e.what()).find("CUDA support was not built"), std::string::npos) << e.what();
  }
  EXPECT_EQ(ga::installed_device_kernels(), nullptr);
  ga::Tensor x = ga::Tensor::ones(ga::Shape{2}, 0);
  EXPECT_FALSE(x.in_device_memory());
  EXPECT_EQ(ga::sum(x * 3.0F).item(), 6.0F);
}
