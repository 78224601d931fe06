#pragma once
// What a training step uses, chosen by device kind: where tensors live, where
// handles come from, how batches are staged, where convolutions run, and the
// pinned allocator whose statistics the summary reports. The training loop
// sees only this, so each device kind is a runtime, not a loop of its own.
#include <memory>
#include <string>
#include <vector>

#include "glassbox/host_allocator/host_stats.hpp"
#include "staging.hpp"
#include "worker_round.hpp"

namespace glassbox::demo {

class Runtime {
 public:
  virtual ~Runtime() = default;
  /// For the banner: "cpu (sim backends)", "cuda (GPU 0 of 1)".
  virtual std::string description() const = 0;
  virtual int device_count() const = 0;
  /// Where the parameters and the staged batches live: autograd::kCpu or a GPU.
  virtual int tensor_device() const noexcept = 0;
  /// The libraries whose handles each step's worker threads take.
  virtual const std::vector<HandleSource>& handle_sources() const = 0;
  virtual BatchStager& stager() noexcept = 0;
  /// The statistics of the pinned host allocator the stager uses.
  virtual host_allocator::HostStats host_stats() const = 0;
};

/// For "cpu" or "cuda". Throws glassbox::Error when the build or the machine
/// has no such device.
std::unique_ptr<Runtime> make_runtime(const std::string& device);

}  // namespace glassbox::demo
