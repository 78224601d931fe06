#pragma once
// A tensor a node keeps for its backward. It remembers the version it was
// saved at, so reading it after an in-place change (which would silently give
// a wrong gradient) throws instead, and it can be released after a backward
// that does not keep the graph, so a second backward fails clearly.
//
// Saved without history (a detached alias): a node saving its own output
// would otherwise own itself through the output's grad_fn.
// Thread-safety: unpack() may run concurrently; release() must not race it.
#include <cstdint>

#include "glassbox/autograd/tensor.hpp"

namespace glassbox::autograd {

class SavedTensor {
 public:
  SavedTensor() = default;
  explicit SavedTensor(const Tensor& t);

  /// The saved values. Throws glassbox::Error naming `node` when they were
  /// released or modified in place since they were saved.
  Tensor unpack(const char* node) const;
  void release() noexcept;

 private:
  Tensor data_;
  std::uint32_t saved_version_ = 0;
  bool was_defined_ = false;
};

}  // namespace glassbox::autograd
