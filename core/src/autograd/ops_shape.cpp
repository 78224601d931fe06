// reshape: a view of the same contiguous data under another shape.
#include <string>

#include "glassbox/autograd/ops.hpp"
#include "glassbox/error.hpp"
#include "op_support.hpp"

namespace glassbox::autograd {

namespace {

// Shares x's storage and version counter, as a view does: an in-place change
// through either alias is seen by tensors saved through the other.
Tensor view_as(const Tensor& x, Shape shape) {
  return Tensor(detail::make_pooled<TensorImpl>(shape, x.device(), x.impl()->storage));
}

class ReshapeBackward final : public Node {
 public:
  ReshapeBackward(int device, EdgeList edges, Shape input_shape)
      : Node(device, std::move(edges)), input_shape_(input_shape) {}
  TensorList apply(TensorList&& grads) override {
    return detail::only_result(std::move(grads), view_as(grads[0], input_shape_));
  }
  const char* name() const noexcept override { return "ReshapeBackward"; }

 private:
  Shape input_shape_;
};

}  // namespace

Tensor reshape(const Tensor& x, Shape shape) {
  detail::check_defined("reshape", x);
  if (shape.numel() != x.numel()) {
    throw Error("reshape: cannot view a tensor of shape " + x.shape().str() + " (" + std::to_string(x.numel()) +
                " elements) as " + shape.str() + " (" + std::to_string(shape.numel()) + " elements)");
  }
  return detail::record<ReshapeBackward>(view_as(x, shape), {&x}, x.shape());
}

Tensor flatten(const Tensor& x) {
  detail::check_defined("flatten", x);
  if (x.shape().ndim() == 0) throw Error("flatten: needs at least one dimension, got shape []");
  const std::int64_t rows = x.shape()[0];
  return reshape(x, Shape{rows, rows == 0 ? 0 : x.numel() / rows});
}

}  // namespace glassbox::autograd
