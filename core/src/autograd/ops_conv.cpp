// conv2d: argument checks, the op and its backward node. The arithmetic is in
// the kernels conv2d_kernels(device) picks for host memory, in the installed
// DeviceKernels (cuDNN) for device memory. Device kernels do not go through
// the conv2d runner: the CUDA ones already run inside a cuDNN state.
#include <string>

#include "conv2d_kernels.hpp"
#include "glassbox/autograd/conv2d_runner.hpp"
#include "glassbox/autograd/ops.hpp"
#include "glassbox/error.hpp"
#include "op_support.hpp"
#include "tensor_math.hpp"

namespace glassbox::autograd {

namespace {

using detail::Conv2dGeometry;

[[noreturn]] void reject(const Tensor& input, const Tensor& weight, const Tensor& bias, int stride, int padding,
                         const std::string& why) {
  throw Error("conv2d: input " + input.shape().str() + ", weight " + weight.shape().str() + ", bias " +
              (bias.defined() ? bias.shape().str() : "none") + ", stride " + std::to_string(stride) + ", padding " +
              std::to_string(padding) + ": " + why);
}

Conv2dGeometry geometry(const Tensor& input, const Tensor& weight, const Tensor& bias, int stride, int padding) {
  detail::check_defined("conv2d", input);
  detail::check_defined("conv2d", weight);
  const Shape& x = input.shape();
  const Shape& w = weight.shape();
  if (x.ndim() != 4 || w.ndim() != 4) {
    reject(input, weight, bias, stride, padding, "input [n, c, h, w] and weight [k, c, r, s] must be 4-d");
  }
  if (x[1] != w[1]) reject(input, weight, bias, stride, padding, "input and weight channel counts differ");
  if (bias.defined() && (bias.shape().ndim() != 1 || bias.shape()[0] != w[0])) {
    reject(input, weight, bias, stride, padding, "bias must be [k], one value per output channel");
  }
  if (stride < 1 || padding < 0) reject(input, weight, bias, stride, padding, "stride must be >= 1 and padding >= 0");
  const bool same_device =
      input.device() == weight.device() && input.in_device_memory() == weight.in_device_memory() &&
      (!bias.defined() || (bias.device() == input.device() && bias.in_device_memory() == input.in_device_memory()));
  if (!same_device) reject(input, weight, bias, stride, padding, "tensors are on different devices");
  if (x[2] + 2 * padding < w[2] || x[3] + 2 * padding < w[3]) {
    reject(input, weight, bias, stride, padding, "the kernel is larger than the padded input");
  }
  return Conv2dGeometry{x[0],
                        x[1],
                        x[2],
                        x[3],
                        w[0],
                        w[2],
                        w[3],
                        stride,
                        padding,
                        (x[2] + 2 * padding - w[2]) / stride + 1,
                        (x[3] + 2 * padding - w[3]) / stride + 1};
}

class Conv2dBackward final : public Node {
 public:
  Conv2dBackward(int device, EdgeList edges, const Conv2dGeometry& g, const Tensor& input, const Tensor& weight)
      : Node(device, std::move(edges)), g_(g), input_(input), weight_(weight) {}

  TensorList apply(TensorList&& grads) override {
    if (DeviceKernels* k = math::kernels_of(grads[0])) return apply_on_device(*k, grads[0]);
    const detail::Conv2dKernels& kernels = detail::conv2d_kernels(device());
    const Tensor& gy = grads[0];
    TensorList out(3);
    if (next_edges()[0].valid()) {
      Tensor weight = weight_.unpack(name());
      out[0] = Tensor::zeros(Shape{g_.n, g_.c, g_.h, g_.w}, device());
      run_conv2d_kernel(device(), [&] { kernels.backward_input(g_, gy.data(), weight.data(), out[0].mutable_data()); });
    }
    const bool want_bias = next_edges()[2].valid();
    if (next_edges()[1].valid() || want_bias) {
      Tensor input = input_.unpack(name());
      Tensor gw = Tensor::zeros(Shape{g_.k, g_.c, g_.r, g_.s}, device());
      Tensor gb = want_bias ? Tensor::zeros(Shape{g_.k}, device()) : Tensor();
      run_conv2d_kernel(device(), [&] {
        kernels.backward_weight(g_, gy.data(), input.data(), gw.mutable_data(),
                                want_bias ? gb.mutable_data() : std::span<float>());
      });
      if (next_edges()[1].valid()) out[1] = gw;
      out[2] = gb;
    }
    return out;
  }
  const char* name() const noexcept override { return "Conv2dBackward"; }
  void release_variables() override {
    input_.release();
    weight_.release();
  }

 private:
  // The device kernels overwrite their outputs, so these start empty.
  TensorList apply_on_device(DeviceKernels& k, const Tensor& gy) {
    TensorList out(3);
    if (next_edges()[0].valid()) {
      Tensor weight = weight_.unpack(name());
      out[0] = Tensor::empty(Shape{g_.n, g_.c, g_.h, g_.w}, device());
      k.conv2d_backward_input(device(), g_, math::ptr(gy), math::ptr(weight), math::mutable_ptr(out[0]));
    }
    const bool want_bias = next_edges()[2].valid();
    if (next_edges()[1].valid() || want_bias) {
      Tensor input = input_.unpack(name());
      Tensor gw = Tensor::empty(Shape{g_.k, g_.c, g_.r, g_.s}, device());
      Tensor gb = want_bias ? Tensor::empty(Shape{g_.k}, device()) : Tensor();
      k.conv2d_backward_weight(device(), g_, math::ptr(input), math::ptr(gy), math::mutable_ptr(gw),
                               want_bias ? math::mutable_ptr(gb) : nullptr);
      if (next_edges()[1].valid()) out[1] = gw;
      out[2] = gb;
    }
    return out;
  }

  Conv2dGeometry g_;
  SavedTensor input_, weight_;
};

}  // namespace

Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, int stride, int padding) {
  const Conv2dGeometry g = geometry(input, weight, bias, stride, padding);
  if (DeviceKernels* k = math::kernels_of(input)) {
    Tensor out = Tensor::empty(Shape{g.n, g.k, g.oh, g.ow}, input.device());
    k->conv2d_forward(input.device(), g, math::ptr(input), math::ptr(weight),
                      bias.defined() ? math::ptr(bias) : nullptr, math::mutable_ptr(out));
    return detail::record<Conv2dBackward>(out, {&input, &weight, &bias}, g, input, weight);
  }
  Tensor out = Tensor::zeros(Shape{g.n, g.k, g.oh, g.ow}, input.device());
  run_conv2d_kernel(input.device(), [&] {
    detail::conv2d_kernels(input.device())
        .forward(g, input.data(), weight.data(), bias.defined() ? bias.data() : std::span<const float>(),
                 out.mutable_data());
  });
  return detail::record<Conv2dBackward>(out, {&input, &weight, &bias}, g, input, weight);
}

}  // namespace glassbox::autograd
