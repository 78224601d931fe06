#pragma once
// One training step, DataParallel-style: the batch is split into one shard
// per worker, each shard staged on the runtime's tensor device (as
// DataParallel scatters a host batch chunk by chunk), fresh worker threads
// (or, for one worker, optionally the caller) take their handles and run the
// forward of their shard, then one backward through the engine for the whole
// batch (its checkpointed segments re-enter the engine) and an SGD update.
// The same code for every device: only the runtime differs.
#include "data.hpp"
#include "model.hpp"
#include "runtime.hpp"

namespace glassbox::demo {

struct TrainOptions {
  int threads = 4;
  float learning_rate = 0.05F;
  // With one worker, run it on the calling thread instead of a fresh one, as
  // DataParallel runs a single replica.
  bool one_worker_on_caller = false;
};

/// Returns the batch's mean cross-entropy before the update. `model` must
/// live on runtime.tensor_device().
float train_step(SmallCnn& model, Runtime& runtime, const Batch& batch, const TrainOptions& options);

}  // namespace glassbox::demo
