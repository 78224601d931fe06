#include "glassbox/autograd/accumulate_grad.hpp"

#include <limits>

#include "glassbox/autograd/detail/pooled.hpp"
#include "tensor_math.hpp"

namespace glassbox::autograd {

AccumulateGrad::AccumulateGrad(std::shared_ptr<TensorImpl> leaf) : Node(leaf->device), leaf_(std::move(leaf)) {
  // Run as soon as ready: frees the gradient early, as PyTorch does.
  set_sequence_nr(std::numeric_limits<std::uint64_t>::max());
  add_input_metadata(Tensor(leaf_));
}

TensorList AccumulateGrad::apply(TensorList&& grads) {
  Tensor& incoming = grads[0];
  if (!incoming.defined()) return {};
  std::lock_guard lock(leaf_->mu);
  if (!leaf_->grad.defined()) {
    // The leaf must not alias a gradient someone else holds (a root gradient, a capture).
    leaf_->grad = math::exclusively_owned(incoming) ? std::move(incoming) : incoming.clone();
  } else {
    math::accumulate(leaf_->grad, incoming);
  }
  return {};
}

Edge gradient_edge(const Tensor& t) {
  if (!t.defined()) return {};
  if (t.grad_fn()) return Edge{t.grad_fn(), t.output_nr()};
  if (!t.requires_grad()) return {};
  TensorImpl& impl = *t.impl();
  std::lock_guard lock(impl.mu);
  std::shared_ptr<Node> acc = impl.grad_accumulator.lock();
  if (!acc) {
    acc = detail::make_pooled<AccumulateGrad>(t.impl_ptr());
    impl.grad_accumulator = acc;
  }
  return Edge{std::move(acc), 0};
}

}  // namespace glassbox::autograd
