// The README's "Link it into your service", done for real: install glassbox
// from this build tree to a prefix with `cmake --install`, configure and build
// examples/link-into-service against it with find_package(glassbox) (with
// this tree's flags and warnings, so a sanitizer build links), run it, and
// scrape its /metrics for what each part counted and load its live page (/).
// Then again on a machine without the CUDA toolkit and cuDNN (hidden from
// CMake), where a service of the other parts must still configure, and
// glassbox::cuda, asked for as a component, must fail saying why.
#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <utility>

#include "child_process.hpp"
#include "prometheus_text.hpp"
#include "run_command.hpp"
#include "source_dir.hpp"

namespace fs = std::filesystem;
using glassbox::testing::parse_prometheus_text;
using glassbox::testing::Sample;
using namespace std::chrono_literals;

namespace {

// Inside the build tree and the same every run, so ccache and Ninja make a
// rerun cheap; `cmake --install` copies only files that changed.
const fs::path kWork = fs::path(GLASSBOX_BINARY_DIR) / "link-into-service";
const fs::path kPrefix = kWork / "prefix";

std::string in_quotes(const fs::path& p) { return "'" + p.string() + "'"; }

// Runs a command and fails the test with its output when it fails; returns the output.
std::string run_step(const std::string& what, const std::string& command) {
  auto r = glassbox::testing::run_command(command);
  EXPECT_EQ(r.status, 0) << what << " failed: " << command << "\n" << r.output;
  return r.output;
}

void install() {
  run_step("install", std::string(GLASSBOX_CMAKE) + " --install " + in_quotes(GLASSBOX_BINARY_DIR) + " --prefix " +
                          in_quotes(kPrefix));
  ASSERT_TRUE(fs::exists(kPrefix / "lib/cmake/glassbox/glassboxConfig.cmake"));
}

// CMake arguments that make this machine look like one without the CUDA
// toolkit: its package is not looked for, and nothing under its folder
// (cuDNN included, where it sits next to the toolkit) is found.
std::string without_cuda() {
  std::string hidden = " -DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON";
  const fs::path root = GLASSBOX_CUDA_ROOT;
  if (!root.empty())
    hidden += " " + in_quotes("-DCMAKE_IGNORE_PREFIX_PATH=" + root.string() + ";" + fs::canonical(root).string());
  return hidden;
}

std::string configure_command(const fs::path& source, const fs::path& build, const std::string& extra = "") {
  std::string c = std::string(GLASSBOX_CMAKE) + " -S " + in_quotes(source) + " -B " + in_quotes(build) + " -G '" +
                  GLASSBOX_CMAKE_GENERATOR + "'" + " -DCMAKE_PREFIX_PATH=" + in_quotes(kPrefix) +
                  " -DCMAKE_BUILD_TYPE=" GLASSBOX_BUILD_TYPE + " -DCMAKE_CXX_COMPILER=" + in_quotes(GLASSBOX_CXX) +
                  " '-DCMAKE_CXX_FLAGS=" GLASSBOX_EXAMPLE_CXX_FLAGS "'" +
                  " '-DCMAKE_EXE_LINKER_FLAGS=" GLASSBOX_EXAMPLE_LINKER_FLAGS "'" + extra;
  const std::string ccache = GLASSBOX_CCACHE;
  if (!ccache.empty() && !ccache.ends_with("NOTFOUND")) c += " -DCMAKE_CXX_COMPILER_LAUNCHER=" + in_quotes(ccache);
  return c;
}

// CMake wraps its messages: the output with every run of white space made one space.
std::string one_line(const std::string& output) { return std::regex_replace(output, std::regex(R"(\s+)"), " "); }

double sum_of(const std::vector<Sample>& samples, const std::string& name) {
  double total = 0;
  for (const auto& s : samples) total += s.name == name ? s.value : 0;
  return total;
}

// Configures and builds the example in `build` (with `extra` CMake
// arguments), runs it and checks what its /metrics counted. Returns the
// configure output and the service's first line.
std::pair<std::string, std::string> build_run_and_scrape(const fs::path& build, const std::string& extra = "") {
  const std::string configured = run_step(
      "configure", configure_command(glassbox::testing::source_dir() / "examples/link-into-service", build, extra));
  run_step("build", std::string(GLASSBOX_CMAKE) + " --build " + in_quotes(build));
  if (::testing::Test::HasFailure()) return {configured, ""};

  constexpr int kSteps = 40;
  glassbox::testing::ChildProcess service((build / "link-into-service").string(),
                                          {"--steps", std::to_string(kSteps), "--metrics-addr", "127.0.0.1:0"});
  std::string ready = service.read_line();
  std::smatch port;
  EXPECT_TRUE(std::regex_search(ready, port, std::regex(R"(ready: .* metrics at http://127\.0\.0\.1:(\d+)/metrics)")))
      << "unexpected first line: " << ready;
  if (port.empty()) return {configured, ready};

  httplib::Client client("127.0.0.1", std::stoi(port[1].str()));
  auto res = client.Get("/metrics");
  EXPECT_TRUE(res) << httplib::to_string(res.error());
  if (res) {
    EXPECT_EQ(res->status, 200);
    auto samples = parse_prometheus_text(res->body);
    // Each step stages one batch in the host allocator, takes a cuBLAS handle
    // and runs a backward pass of tanh, matmul and mse_loss nodes.
    EXPECT_EQ(sum_of(samples, "glassbox_host_alloc_requests_total"), kSteps);
    double handles = sum_of(samples, "glassbox_handles_created_total");
    EXPECT_GE(handles, 1);
    EXPECT_LE(handles, 2) << "two worker threads, one cuBLAS handle each at most";
    EXPECT_GE(sum_of(samples, "glassbox_autograd_nodes_executed_total"), 3 * kSteps);
  }
  // Any service that serves /metrics serves the live page beside it.
  auto page = client.Get("/");
  EXPECT_TRUE(page) << httplib::to_string(page.error());
  if (page) {
    EXPECT_EQ(page->status, 200);
    EXPECT_NE(page->body.find("<title>glassbox: live</title>"), std::string::npos);
  }
  EXPECT_NE(ready.find(", live page at http://127.0.0.1:" + port[1].str() + "/"), std::string::npos) << ready;
  service.signal(SIGTERM);
  EXPECT_EQ(service.wait(20s), 0) << "the service did not exit cleanly on SIGTERM";
  return {configured, ready};
}

}  // namespace

TEST(LinkIntoService, AnInstalledGlassboxBuildsAServiceWhoseMetricsScrape) {
  ASSERT_NO_FATAL_FAILURE(install());
  build_run_and_scrape(kWork / "build");
}

TEST(LinkIntoService, WithoutTheCudaToolkitAServiceOfTheOtherPartsBuildsAndServes) {
  ASSERT_NO_FATAL_FAILURE(install());
  auto [configured, ready] = build_run_and_scrape(kWork / "build-without-cuda", without_cuda());
  if (GLASSBOX_BUILT_WITH_CUDA) {
    EXPECT_NE(one_line(configured).find("no glassbox::cuda here (the CUDA toolkit was not found)"), std::string::npos)
        << configured;
  }
  EXPECT_NE(ready.find("on cpu (sim backend)"), std::string::npos) << ready;
}

TEST(LinkIntoService, AskedForAsAComponentGlassboxCudaIsRequired) {
  ASSERT_NO_FATAL_FAILURE(install());
  const fs::path source = kWork / "needs-cuda";
  fs::create_directories(source);
  std::ofstream(source / "CMakeLists.txt") << "cmake_minimum_required(VERSION 3.25)\n"
                                              "project(needs_cuda LANGUAGES CXX)\n"
                                              "find_package(glassbox REQUIRED COMPONENTS cuda)\n";
  auto hidden = glassbox::testing::run_command(configure_command(source, kWork / "needs-cuda-hidden", without_cuda()));
  EXPECT_NE(hidden.status, 0) << hidden.output;
  const std::string why =
      GLASSBOX_BUILT_WITH_CUDA ? "the CUDA toolkit was not found" : "this glassbox was built without its CUDA backend";
  EXPECT_NE(one_line(hidden.output).find("glassbox::cuda (COMPONENTS cuda) is not available: " + why),
            std::string::npos)
      << hidden.output;
  auto visible = glassbox::testing::run_command(configure_command(source, kWork / "needs-cuda-visible"));
  EXPECT_EQ(visible.status == 0, static_cast<bool>(GLASSBOX_BUILT_WITH_CUDA)) << visible.output;
}
