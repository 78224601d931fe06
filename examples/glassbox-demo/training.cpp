#include "training.hpp"

#include <vector>

#include "glassbox/autograd/autograd.hpp"
#include "glassbox/autograd/ops.hpp"

namespace glassbox::demo {

namespace {

using autograd::Shape;
using autograd::Tensor;

// Rows [begin, end) of the batch: worker i's share of n rows over w workers.
struct Shard {
  std::int64_t begin, end;
  Shard(std::int64_t n, int i, int w) : begin(n * i / w), end(n * (i + 1) / w) {}
  std::int64_t rows() const { return end - begin; }
};

// The shard's images and labels, still in host memory.
Batch rows_of(const Batch& batch, const Shard& s) {
  const Shape& x = batch.shape;
  const std::int64_t per_row = x[1] * x[2] * x[3];
  auto first = batch.images.begin() + s.begin * per_row;
  return {Shape{s.rows(), x[1], x[2], x[3]}, std::vector<float>(first, first + s.rows() * per_row),
          std::vector<std::int64_t>(batch.labels.begin() + s.begin, batch.labels.begin() + s.end)};
}

}  // namespace

float train_step(SmallCnn& model, Runtime& runtime, const Batch& batch, const TrainOptions& options) {
  const std::int64_t n = batch.shape[0];
  const auto workers = static_cast<std::size_t>(options.threads);
  // Staged here, one shard after another, so the stager is used by one thread.
  std::vector<Batch> shards(workers);
  std::vector<Tensor> images(workers);
  for (std::size_t i = 0; i < workers; ++i) {
    const Shard shard(n, static_cast<int>(i), options.threads);
    if (shard.rows() == 0) continue;  // more workers than rows
    shards[i] = rows_of(batch, shard);
    images[i] = runtime.stager().stage(shards[i]);
  }
  std::vector<Tensor> losses(workers);
  auto forward = [&](int worker) {
    const auto i = static_cast<std::size_t>(worker);
    if (!images[i].defined()) return;
    const float share = static_cast<float>(shards[i].labels.size()) / static_cast<float>(n);
    // The labels stay in host memory: cross_entropy reads them there.
    losses[i] = autograd::cross_entropy(model.forward(images[i]), shards[i].labels) * share;
  };
  if (options.one_worker_on_caller && workers == 1) {
    run_on_caller(runtime.handle_sources(), forward);
  } else {
    run_worker_round(runtime.handle_sources(), options.threads, runtime.device_count(), forward);
  }
  Tensor total;
  for (const Tensor& l : losses) {
    if (l.defined()) total = total.defined() ? total + l : l;
  }
  autograd::backward({total});
  model.sgd_step(options.learning_rate);
  return total.item();
}

}  // namespace glassbox::demo
