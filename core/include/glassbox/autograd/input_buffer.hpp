#pragma once
// The gradients gathered for one node before it runs: one slot per input,
// summing what arrives from every path (the join of a diamond).
// Not thread-safe: the engine guards each buffer with its graph task's lock.
#include <cstddef>
#include <cstdint>
#include <utility>

#include "glassbox/autograd/node.hpp"

namespace glassbox::autograd {

class InputBuffer {
 public:
  InputBuffer() = default;
  explicit InputBuffer(std::size_t slots) : grads_(slots) {}
  /// A one-slot buffer holding `only`'s single gradient, the list itself
  /// kept: a chain's nodes hand one list along instead of each making one.
  static InputBuffer holding(TensorList&& only) {
    InputBuffer b;
    b.grads_ = std::move(only);
    return b;
  }

  /// Adds `grad` into `slot`, in place when no one else holds the slot's
  /// tensor or its data. An undefined `grad` adds nothing.
  void add(std::uint32_t slot, Tensor&& grad);
  TensorList take() && { return std::move(grads_); }
  /// Input slots; 0 once moved from.
  std::size_t slots() const noexcept { return grads_.size(); }

 private:
  TensorList grads_;
};

}  // namespace glassbox::autograd
