// Matrix product and its backward node.
#include <algorithm>
#include <string>

#include "glassbox/autograd/ops.hpp"
#include "glassbox/error.hpp"
#include "op_support.hpp"
#include "tensor_math.hpp"

namespace glassbox::autograd {

namespace {

void host_gemm(const GemmArgs& g) {
  std::fill(g.c, g.c + g.m * g.n, 0.0F);
  for (std::int64_t i = 0; i < g.m; ++i) {
    for (std::int64_t p = 0; p < g.k; ++p) {
      float av = g.transpose_a ? g.a[p * g.lda + i] : g.a[i * g.lda + p];
      for (std::int64_t j = 0; j < g.n; ++j) {
        float bv = g.transpose_b ? g.b[j * g.ldb + p] : g.b[p * g.ldb + j];
        g.c[i * g.n + j] += av * bv;
      }
    }
  }
}

// C[m, n] = op(A)[m, k] * op(B)[k, n], op transposing when asked; row-major.
Tensor gemm(const Tensor& a, bool ta, const Tensor& b, bool tb) {
  const std::int64_t m = ta ? a.shape()[1] : a.shape()[0];
  const std::int64_t n = tb ? b.shape()[0] : b.shape()[1];
  Tensor c = Tensor::empty(Shape{m, n}, a.device());
  GemmArgs args{math::ptr(a),
                math::ptr(b),
                math::mutable_ptr(c),
                m,
                n,
                ta ? a.shape()[0] : a.shape()[1],
                a.shape()[1],
                b.shape()[1],
                ta,
                tb};
  if (DeviceKernels* k = math::kernels_of(a)) {
    k->gemm(a.device(), args);
  } else {
    host_gemm(args);
  }
  return c;
}

class MatmulBackward final : public Node {
 public:
  MatmulBackward(int device, EdgeList edges, const Tensor& a, const Tensor& b)
      : Node(device, std::move(edges)), a_(a), b_(b) {}
  TensorList apply(TensorList&& grads) override {
    const Tensor& g = grads[0];
    return {gemm(g, false, b_.unpack(name()), true), gemm(a_.unpack(name()), true, g, false)};
  }
  const char* name() const noexcept override { return "MatmulBackward"; }
  void release_variables() override {
    a_.release();
    b_.release();
  }

 private:
  SavedTensor a_, b_;
};

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  detail::check_ndim("matmul", a, 2);
  detail::check_ndim("matmul", b, 2);
  if (a.shape()[1] != b.shape()[0] || a.device() != b.device() || a.in_device_memory() != b.in_device_memory()) {
    throw Error("matmul: cannot multiply " + a.shape().str() + " on device " + device_name(a.device()) + " by " +
                b.shape().str() + " on device " + device_name(b.device()));
  }
  return detail::record<MatmulBackward>(gemm(a, false, b, false), {&a, &b}, a, b);
}

}  // namespace glassbox::autograd
