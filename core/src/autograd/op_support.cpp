#include "op_support.hpp"

#include <string>

#include "glassbox/error.hpp"

namespace glassbox::autograd::detail {

void check_defined(const char* op, const Tensor& t) {
  if (!t.defined()) throw Error(std::string(op) + ": an input is undefined");
}

void check_same(const char* op, const Tensor& a, const Tensor& b) {
  check_defined(op, a);
  check_defined(op, b);
  if (a.shape() != b.shape() || a.device() != b.device()) {
    throw Error(std::string(op) + ": inputs of shape " + a.shape().str() + " on device " + device_name(a.device()) +
                " and " + b.shape().str() + " on device " + device_name(b.device()) +
                " (shapes and devices must match; broadcasting is not supported)");
  }
  if (a.in_device_memory() != b.in_device_memory()) {
    throw Error(std::string(op) + ": one input is in device memory and one in host memory on device " +
                device_name(a.device()) + " (make device tensors only after use_cuda())");
  }
}

void check_ndim(const char* op, const Tensor& t, std::size_t ndim) {
  check_defined(op, t);
  if (t.shape().ndim() != ndim) {
    throw Error(std::string(op) + ": expects a " + std::to_string(ndim) + "-d tensor, got shape " + t.shape().str());
  }
}

void set_history(const Tensor& out, const std::shared_ptr<Node>& node) {
  TensorImpl& impl = *out.impl();
  impl.output_nr = node->add_input_metadata(out);
  impl.grad_fn = node;
  impl.requires_grad = true;
}

}  // namespace glassbox::autograd::detail
