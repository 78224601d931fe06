#pragma once
// The node that ends every path to a leaf: adds the arriving gradient into
// the leaf's grad. One per leaf, found again through a weak pointer on the
// leaf, so every graph built from a leaf accumulates through the same node.
//
// Thread-safety: apply() takes the leaf's mutex, so concurrent backward
// passes into a shared leaf add up exactly.
#include <memory>

#include "glassbox/autograd/edge.hpp"
#include "glassbox/autograd/node.hpp"
#include "glassbox/autograd/tensor.hpp"

namespace glassbox::autograd {

class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(std::shared_ptr<TensorImpl> leaf);
  TensorList apply(TensorList&& grads) override;
  const char* name() const noexcept override { return "AccumulateGrad"; }

 private:
  std::shared_ptr<TensorImpl> leaf_;
};

/// Where the gradient of `t` goes: its grad_fn slot, the accumulator of a
/// leaf that requires grad, or an invalid edge.
Edge gradient_edge(const Tensor& t);

}  // namespace glassbox::autograd
