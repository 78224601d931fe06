// The README's "Link it into your service", done for real: install glassbox
// from this build tree to a prefix with `cmake --install`, configure and build
// examples/link-into-service against it with find_package(glassbox) (with
// this tree's flags and warnings, so a sanitizer build links), run it, and
// scrape its /metrics for what each part counted.
#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
#include <filesystem>
#include <regex>

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

std::string in_quotes(const fs::path& p) { return "'" + p.string() + "'"; }

// Runs a command and fails the test with its output when it fails.
void run_step(const std::string& what, const std::string& command) {
  auto r = glassbox::testing::run_command(command);
  ASSERT_EQ(r.status, 0) << what << " failed: " << command << "\n" << r.output;
}

std::string configure_command(const fs::path& prefix, const fs::path& build) {
  std::string c =
      std::string(GLASSBOX_CMAKE) + " -S " + in_quotes(glassbox::testing::source_dir() / "examples/link-into-service") +
      " -B " + in_quotes(build) + " -G '" GLASSBOX_CMAKE_GENERATOR "'" + " -DCMAKE_PREFIX_PATH=" + in_quotes(prefix) +
      " -DCMAKE_BUILD_TYPE=" GLASSBOX_BUILD_TYPE + " -DCMAKE_CXX_COMPILER=" + in_quotes(GLASSBOX_CXX) +
      " '-DCMAKE_CXX_FLAGS=" GLASSBOX_EXAMPLE_CXX_FLAGS "'" +
      " '-DCMAKE_EXE_LINKER_FLAGS=" GLASSBOX_EXAMPLE_LINKER_FLAGS "'";
  const std::string ccache = GLASSBOX_CCACHE;
  if (!ccache.empty() && !ccache.ends_with("NOTFOUND")) c += " -DCMAKE_CXX_COMPILER_LAUNCHER=" + in_quotes(ccache);
  return c;
}

double sum_of(const std::vector<Sample>& samples, const std::string& name) {
  double total = 0;
  for (const auto& s : samples) total += s.name == name ? s.value : 0;
  return total;
}

}  // namespace

TEST(LinkIntoService, AnInstalledGlassboxBuildsAServiceWhoseMetricsScrape) {
  const fs::path prefix = kWork / "prefix", build = kWork / "build";
  ASSERT_NO_FATAL_FAILURE(run_step("install", std::string(GLASSBOX_CMAKE) + " --install " +
                                                  in_quotes(GLASSBOX_BINARY_DIR) + " --prefix " + in_quotes(prefix)));
  ASSERT_TRUE(fs::exists(prefix / "lib/cmake/glassbox/glassboxConfig.cmake"));
  ASSERT_NO_FATAL_FAILURE(run_step("configure", configure_command(prefix, build)));
  ASSERT_NO_FATAL_FAILURE(run_step("build", std::string(GLASSBOX_CMAKE) + " --build " + in_quotes(build)));

  constexpr int kSteps = 40;
  glassbox::testing::ChildProcess service((build / "link-into-service").string(),
                                          {"--steps", std::to_string(kSteps), "--metrics-addr", "127.0.0.1:0"});
  std::string ready = service.read_line();
  std::smatch port;
  ASSERT_TRUE(std::regex_search(ready, port, std::regex(R"(ready: .* metrics at http://127\.0\.0\.1:(\d+)/metrics)")))
      << "unexpected first line: " << ready;

  httplib::Client client("127.0.0.1", std::stoi(port[1].str()));
  auto res = client.Get("/metrics");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  ASSERT_EQ(res->status, 200);
  auto samples = parse_prometheus_text(res->body);
  // Each step stages one batch in the host allocator, takes a cuBLAS handle
  // and runs a backward pass of tanh, matmul and mse_loss nodes.
  EXPECT_EQ(sum_of(samples, "glassbox_host_alloc_requests_total"), kSteps);
  double handles = sum_of(samples, "glassbox_handles_created_total");
  EXPECT_GE(handles, 1);
  EXPECT_LE(handles, 2) << "two worker threads, one cuBLAS handle each at most";
  EXPECT_GE(sum_of(samples, "glassbox_autograd_nodes_executed_total"), 3 * kSteps);

  service.signal(SIGTERM);
  EXPECT_EQ(service.wait(20s), 0) << "the service did not exit cleanly on SIGTERM";
}
