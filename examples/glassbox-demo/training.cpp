#include "training.hpp"

#include <vector>

#include "glassbox/autograd/autograd.hpp"
#include "glassbox/autograd/ops.hpp"
#include "glassbox/error.hpp"

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

Tensor rows_of(const Tensor& images, const Shard& s) {
  const Shape& x = images.shape();
  const std::int64_t per_row = x[1] * x[2] * x[3];
  auto first = images.data().begin() + s.begin * per_row;
  return Tensor::from(Shape{s.rows(), x[1], x[2], x[3]}, std::vector<float>(first, first + s.rows() * per_row));
}

}  // namespace

float train_step(SmallCnn& model, Runtime& runtime, const Batch& batch, const TrainOptions& options) {
  BatchStager* stager = runtime.stager();
  if (stager == nullptr) throw Error("training on " + runtime.description() + " is not available");
  const Tensor images = stager->stage(batch);
  const std::int64_t n = images.shape()[0];
  std::vector<Tensor> losses(static_cast<std::size_t>(options.threads));
  run_worker_round(runtime.handle_sources(), options.threads, runtime.device_count(), [&](int worker) {
    const Shard shard(n, worker, options.threads);
    if (shard.rows() == 0) return;  // more workers than rows
    std::vector<std::int64_t> labels(batch.labels.begin() + shard.begin, batch.labels.begin() + shard.end);
    const float share = static_cast<float>(shard.rows()) / static_cast<float>(n);
    losses[static_cast<std::size_t>(worker)] =
        autograd::cross_entropy(model.forward(rows_of(images, shard)), labels) * share;
  });
  Tensor total;
  for (const Tensor& l : losses) {
    if (l.defined()) total = total.defined() ? total + l : l;
  }
  autograd::backward({total});
  model.sgd_step(options.learning_rate);
  return total.item();
}

}  // namespace glassbox::demo
