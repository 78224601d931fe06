// Matrix product on the CPU and its backward node.
#include <string>

#include "glassbox/autograd/ops.hpp"
#include "glassbox/error.hpp"
#include "op_support.hpp"

namespace glassbox::autograd {

namespace {

// C[m, n] = op(A)[m, k] * op(B)[k, n], op transposing when asked; row-major.
Tensor gemm(const Tensor& a, bool ta, const Tensor& b, bool tb) {
  const std::int64_t m = ta ? a.shape()[1] : a.shape()[0];
  const std::int64_t k = ta ? a.shape()[0] : a.shape()[1];
  const std::int64_t n = tb ? b.shape()[0] : b.shape()[1];
  const std::int64_t lda = a.shape()[1];
  const std::int64_t ldb = b.shape()[1];
  Tensor c = Tensor::zeros(Shape{m, n}, a.device());
  std::span<const float> x = a.data();
  std::span<const float> y = b.data();
  std::span<float> z = c.mutable_data();
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t p = 0; p < k; ++p) {
      float av = ta ? x[static_cast<std::size_t>(p * lda + i)] : x[static_cast<std::size_t>(i * lda + p)];
      for (std::int64_t j = 0; j < n; ++j) {
        float bv = tb ? y[static_cast<std::size_t>(j * ldb + p)] : y[static_cast<std::size_t>(p * ldb + j)];
        z[static_cast<std::size_t>(i * n + j)] += av * bv;
      }
    }
  }
  return c;
}

class MatmulBackward final : public Node {
 public:
  MatmulBackward(int device, std::vector<Edge> edges, const Tensor& a, const Tensor& b)
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
  if (a.shape()[1] != b.shape()[0] || a.device() != b.device()) {
    throw Error("matmul: cannot multiply " + a.shape().str() + " on device " + device_name(a.device()) + " by " +
                b.shape().str() + " on device " + device_name(b.device()));
  }
  return detail::record<MatmulBackward>(gemm(a, false, b, false), {&a, &b}, a, b);
}

}  // namespace glassbox::autograd
