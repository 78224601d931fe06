// Regression: /metrics must start in a process that links cuBLAS. cuBLASLt
// carries ~92 KiB of static TLS, which glibc takes from every new thread's
// stack; prometheus-cpp's civetweb asked for 100 KiB stacks and could not
// start a single thread there. Needs no GPU, only the libraries loaded.
#include <gtest/gtest.h>
#include <httplib.h>

#include "glassbox/cuda/cuda_check.hpp"
#include "glassbox/exporters/prometheus_exporter.hpp"

TEST(ExporterWithCuda, ServesMetricsWithCublasLoaded) {
  (void)glassbox::cuda::cuda_device_count();  // keeps the CUDA libraries linked and loaded
  glassbox::metrics::Registry registry;
  registry.counter("test_loaded_total", "x").with().inc(3);
  glassbox::exporters::PrometheusExporter exporter({"127.0.0.1:0", &registry});
  httplib::Client client("127.0.0.1", exporter.port());
  auto res = client.Get("/metrics");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_NE(res->body.find("test_loaded_total 3"), std::string::npos) << res->body;
}
