// glassbox's side of the training-step comparison: the demo's own step
// (examples/glassbox-demo, train_step on the CUDA runtime) at 1, 4 and 8
// workers on fresh threads, and 1 worker on the calling thread, timed as
// bench/torch/training_step.py times PyTorch's (the same model, batch,
// sharding, pinned staging, reentrant checkpoint and SGD; see that file).
// One JSON line per row, for scripts/compare-table:
//   {"side":"glassbox","metric":"training_step","threads":N,"calls_per_second":steps/s,...}
//
//   glassbox-compare-training-step        on the GPU (nothing to do without one)
//   glassbox-compare-training-step cpu    the demo's CPU runtime (sim backends):
//                                         a check of this program, no comparison
#include <cstdio>
#include <string>
#include <vector>

#include "data.hpp"
#include "glassbox/cuda/cuda_check.hpp"
#include "model.hpp"
#include "runtime.hpp"
#include "torch/timing.hpp"
#include "training.hpp"

namespace demo = glassbox::demo;

int main(int argc, char** argv) {
  const std::string device = argc > 1 ? argv[1] : "cuda";
  if (device != "cpu" && device != "cuda") {
    std::fprintf(stderr, "glassbox-compare-training-step: device '%s': expected cpu or cuda\n", device.c_str());
    return 2;
  }
  if (device == "cuda" && glassbox::cuda::cuda_device_count() == 0) {
    std::fprintf(stderr, "glassbox-compare-training-step: no CUDA device\n");
    return 0;
  }
  constexpr int kBatch = 32, kBatches = 8;
  constexpr float kLearningRate = 0.05F;
  auto runtime = demo::make_runtime(device);
  demo::SmallCnn model(demo::SyntheticImages::kClasses, 1, runtime->tensor_device());
  // Made before timing, as PyTorch's side makes its batches: data generation is no part of the step.
  demo::SyntheticImages data(2);
  std::vector<demo::Batch> batches;
  for (int i = 0; i < kBatches; ++i) batches.push_back(data.next(kBatch));
  // Fresh worker threads at 1, 4 and 8 workers, then one worker on the
  // calling thread (training_step_caller_thread), as DataParallel runs a
  // single replica.
  struct Row {
    const char* metric;
    demo::TrainOptions options;
  };
  for (const Row& row :
       {Row{"training_step", {1, kLearningRate}}, Row{"training_step", {4, kLearningRate}},
        Row{"training_step", {8, kLearningRate}}, Row{"training_step_caller_thread", {1, kLearningRate, true}}}) {
    int n = 0;
    auto step = [&] { return demo::train_step(model, *runtime, batches[n++ % kBatches], row.options); };
    const float first = step();
    const double rate = glassbox::compare::median_steps_per_second(step);
    std::fprintf(stderr, "glassbox-compare-training-step: %s, %d workers, loss %.4f -> %.4f\n", row.metric,
                 row.options.threads, first, step());
    glassbox::compare::report("glassbox", row.metric, row.options.threads, rate);
  }
}
