// A minimal service on an installed glassbox: worker threads run training
// steps that stage each batch in the caching pinned-host allocator, take the
// thread's cuBLAS handle from the handle pool and run forward and backward
// through the autograd engine, while /metrics serves what all three count.
// CUDA parts are used when glassbox was built with them and a GPU is present;
// otherwise the same parts run on the sim backend.
//
//   link-into-service [--steps N] [--metrics-addr HOST:PORT]
//
// Prints "ready: ..." with the /metrics URL and the live page's (/) once the
// steps are done, then serves until SIGINT or SIGTERM, as a service would.
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <glassbox/autograd/autograd.hpp>
#include <glassbox/autograd/grad_mode.hpp>
#include <glassbox/autograd/ops.hpp>
#include <glassbox/error.hpp>
#include <glassbox/exporters/prometheus_exporter.hpp>
#include <glassbox/handle_pool/device_thread_handle_pool.hpp>
#include <glassbox/host_allocator/caching_host_allocator.hpp>
#include <glassbox/host_allocator/sim_host_backend.hpp>
#include <glassbox/sim/fake_handle.hpp>
#if GLASSBOX_HAVE_CUDA
#include <glassbox/cuda/cuda_check.hpp>
#include <glassbox/cuda/handle_pool/current_handles.hpp>
#include <glassbox/cuda/host_allocator/cuda_host_backend.hpp>
#endif

namespace ga = glassbox::autograd;
namespace gh = glassbox::host_allocator;

namespace {

volatile std::sig_atomic_t g_stop = 0;

constexpr int kWorkers = 2;
constexpr std::int64_t kBatch = 16, kFeatures = 8;

// Pinned staging memory and the thread's cuBLAS handle: the CUDA parts with a
// GPU, the sim host backend and a fake cuBLAS pool (same metrics) without.
struct Runtime {
  gh::CachingHostAllocator* pinned = nullptr;
  std::function<void()> take_blas_handle;
  const char* kind = "";
};

Runtime make_runtime() {
#if GLASSBOX_HAVE_CUDA
  if (glassbox::cuda::cuda_device_count() > 0) {
    return {&glassbox::cuda::cuda_host_allocator(), [] { glassbox::handle_pool::current_cublas_handle(0, nullptr); },
            "cuda"};
  }
#endif
  static gh::CachingHostAllocator sim_pinned(std::make_shared<glassbox::host_allocator::SimHostBackend>());
  using Pool = glassbox::handle_pool::DeviceThreadHandlePool<glassbox::sim::FakeHandleFactory>;
  static std::shared_ptr<Pool> pool = Pool::create(glassbox::sim::FakeHandleFactory("cublas"));
  return {&sim_pinned, [] { pool->reserve(0); }, "cpu (sim backend)"};
}

// One step of linear regression: stage the batch, then forward and backward.
float train_step(const Runtime& rt, ga::Tensor& weights, int step) {
  rt.take_blas_handle();
  const std::size_t values = kBatch * kFeatures;
  gh::HostAllocation staging = rt.pinned->allocate(values * sizeof(float));
  auto* batch = static_cast<float*>(staging.ptr);
  for (std::size_t i = 0; i < values; ++i) batch[i] = static_cast<float>((i * 7 + step) % 13) / 13.0F;
  ga::Tensor x = ga::Tensor::from(ga::Shape{kBatch, kFeatures}, std::vector<float>(batch, batch + values));
  rt.pinned->free(staging.ctx);

  ga::Tensor target = ga::Tensor::ones(ga::Shape{kBatch, 1});
  ga::Tensor loss = ga::mse_loss(ga::tanh(ga::matmul(x, weights)), target);
  weights.zero_grad();
  ga::backward({loss});
  ga::NoGradGuard no_grad;
  weights.add_(ga::mul(weights.grad(), -0.1F));
  return loss.item();
}

struct Flags {
  int steps = 100;
  glassbox::exporters::PrometheusOptions metrics = glassbox::exporters::PrometheusOptions::from_env();
};

Flags parse(int argc, char** argv) {
  if (argc % 2 == 0) throw glassbox::ConfigError(std::string(argv[argc - 1]) + " needs a value");
  Flags f;
  for (int i = 1; i < argc; i += 2) {
    std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--metrics-addr") {
      glassbox::exporters::validate_listen_address(value, "--metrics-addr");
      f.metrics.address = value;
      continue;
    }
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), f.steps);
    if (flag != "--steps" || ec != std::errc() || end != value.data() + value.size() || f.steps < 0) {
      throw glassbox::ConfigError(flag + " " + value +
                                  " is not accepted; expected --steps N (N >= 0) or "
                                  "--metrics-addr HOST:PORT");
    }
  }
  return f;
}

int run(const Flags& flags) {
  glassbox::exporters::PrometheusExporter exporter(flags.metrics);
  Runtime rt = make_runtime();
  std::vector<float> last_loss(kWorkers);
  std::vector<std::thread> workers;
  for (int w = 0; w < kWorkers; ++w) {
    workers.emplace_back([&, w] {
      ga::Tensor weights = ga::Tensor::zeros(ga::Shape{kFeatures, 1}).set_requires_grad(true);
      for (int s = w; s < flags.steps; s += kWorkers) last_loss[w] = train_step(rt, weights, s);
    });
  }
  for (auto& t : workers) t.join();
  std::printf("ready: %d steps on %s, loss %.4f, metrics at %s, live page at %s\n", flags.steps, rt.kind, last_loss[0],
              exporter.url().c_str(), exporter.page_url().empty() ? "(off)" : exporter.page_url().c_str());
  std::fflush(stdout);
  while (!g_stop) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGINT, [](int) { g_stop = 1; });
  std::signal(SIGTERM, [](int) { g_stop = 1; });
  try {
    return run(parse(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "link-into-service: %s\n", e.what());
    return 1;
  }
}
