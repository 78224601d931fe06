#include "glassbox/autograd/input_buffer.hpp"

#include "tensor_math.hpp"

namespace glassbox::autograd {

void InputBuffer::add(std::uint32_t slot, Tensor&& grad) {
  if (!grad.defined()) return;
  Tensor& held = grads_[slot];
  if (!held.defined()) {
    held = std::move(grad);
  } else if (math::exclusively_owned(held)) {
    math::accumulate(held, grad);
  } else {
    held = math::binary(BinaryOp::add, held, grad);
  }
}

}  // namespace glassbox::autograd
