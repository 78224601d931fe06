#pragma once
// What every op does around its math: check its inputs, and when a gradient
// is needed, connect a backward node to the inputs' edges and the output.
#include <initializer_list>
#include <memory>
#include <utility>

#include "glassbox/autograd/accumulate_grad.hpp"
#include "glassbox/autograd/detail/pooled.hpp"
#include "glassbox/autograd/grad_mode.hpp"
#include "glassbox/autograd/node.hpp"
#include "glassbox/autograd/saved_tensor.hpp"

namespace glassbox::autograd::detail {

/// Throws glassbox::Error when `t` is undefined.
void check_defined(const char* op, const Tensor& t);
/// Throws glassbox::Error unless `a` and `b` have one shape and one device.
void check_same(const char* op, const Tensor& a, const Tensor& b);
/// Throws glassbox::Error unless `t` has `ndim` dimensions.
void check_ndim(const char* op, const Tensor& t, std::size_t ndim);

/// `t` as the result of a node with one input slot and one next edge, in the
/// list its gradient arrived in: such a node then allocates no list of its
/// own (in a chain of them, that list was a third of the allocations).
inline TensorList only_result(TensorList&& grads, Tensor t) {
  if (grads.size() != 1) return {std::move(t)};  // a pre-hook may have resized it
  grads[0] = std::move(t);
  return std::move(grads);
}

/// Makes `out` (a fresh tensor) the next output of `node`.
void set_history(const Tensor& out, const std::shared_ptr<Node>& node);

/// Makes `out` the output of an `N` whose next edges lead to `inputs`, when
/// grad mode is on and an input requires grad. `N` is constructed from the
/// device, the edges and `args`.
template <class N, class... Args>
Tensor record(Tensor out, std::initializer_list<const Tensor*> inputs, Args&&... args) {
  bool needed = false;
  for (const Tensor* t : inputs) needed = needed || t->requires_grad();
  if (!needed || !GradMode::is_enabled()) return out;
  EdgeList edges;
  edges.reserve(inputs.size());
  for (const Tensor* t : inputs) edges.push_back(gradient_edge(*t));
  set_history(out, make_pooled<N>(out.device(), std::move(edges), std::forward<Args>(args)...));
  return out;
}

}  // namespace glassbox::autograd::detail
