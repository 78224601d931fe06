#pragma once
// One training step, DataParallel-style: the batch is staged, split over
// fresh worker threads that take their handles and run the forward of their
// shard, then one backward through the engine for the whole batch (its
// checkpointed segments re-enter the engine) and an SGD update.
#include "data.hpp"
#include "model.hpp"
#include "runtime.hpp"

namespace glassbox::demo {

struct TrainOptions {
  int threads = 4;
  float learning_rate = 0.05F;
};

/// Returns the batch's mean cross-entropy before the update. Needs
/// runtime.stager(); throws glassbox::Error without one.
float train_step(SmallCnn& model, Runtime& runtime, const Batch& batch, const TrainOptions& options);

}  // namespace glassbox::demo
