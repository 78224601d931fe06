// Direct-loop CPU convolution. All three computations walk the same set of
// (output row, weight tap) pairs; only what they do with a run differs.
#include <algorithm>
#include <numeric>

#include "conv2d_kernels.hpp"

namespace glassbox::autograd::detail {

namespace {

std::int64_t floor_div(std::int64_t a, std::int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// The output positions o in [lo, hi) whose input position o*stride + offset
// lies in [0, size): the rest read padding, which is zero.
struct Run {
  std::int64_t lo, hi;
};
Run valid_outputs(std::int64_t offset, std::int64_t size, std::int64_t stride, std::int64_t outputs) {
  std::int64_t lo = std::max<std::int64_t>(0, floor_div(-offset + stride - 1, stride));
  std::int64_t hi = std::min<std::int64_t>(outputs, floor_div(size - 1 - offset, stride) + 1);
  return {lo, std::max(lo, hi)};
}

// Calls f(weight_index, x_offset, y_offset, count): for j < count, output
// y[y_offset + j] reads input x[x_offset + j * stride] through weight tap
// weight_index. Covers every non-padding (output, tap) pair exactly once.
template <class F>
void for_each_run(const Conv2dGeometry& g, F f) {
  for (std::int64_t ni = 0; ni < g.n; ++ni) {
    for (std::int64_t ki = 0; ki < g.k; ++ki) {
      const std::int64_t y_plane = (ni * g.k + ki) * g.oh * g.ow;
      for (std::int64_t ci = 0; ci < g.c; ++ci) {
        const std::int64_t x_plane = (ni * g.c + ci) * g.h * g.w;
        for (std::int64_t ri = 0; ri < g.r; ++ri) {
          const Run rows = valid_outputs(ri - g.padding, g.h, g.stride, g.oh);
          for (std::int64_t si = 0; si < g.s; ++si) {
            const Run cols = valid_outputs(si - g.padding, g.w, g.stride, g.ow);
            const std::int64_t wi = ((ki * g.c + ci) * g.r + ri) * g.s + si;
            for (std::int64_t o = rows.lo; o < rows.hi; ++o) {
              const std::int64_t ih = o * g.stride + ri - g.padding;
              const std::int64_t iw = cols.lo * g.stride + si - g.padding;
              f(wi, x_plane + ih * g.w + iw, y_plane + o * g.ow + cols.lo, cols.hi - cols.lo);
            }
          }
        }
      }
    }
  }
}

void forward(const Conv2dGeometry& g, std::span<const float> x, std::span<const float> weight,
             std::span<const float> bias, std::span<float> y) {
  if (!bias.empty()) {
    const std::int64_t plane = g.oh * g.ow;
    for (std::int64_t i = 0; i < g.n * g.k; ++i) {
      std::fill_n(y.begin() + i * plane, plane, bias[static_cast<std::size_t>(i % g.k)]);
    }
  }
  const std::int64_t st = g.stride;
  for_each_run(g, [&](std::int64_t wi, std::int64_t xo, std::int64_t yo, std::int64_t count) {
    const float wv = weight[static_cast<std::size_t>(wi)];
    const float* xs = x.data() + xo;
    float* ys = y.data() + yo;
    for (std::int64_t j = 0; j < count; ++j) ys[j] += wv * xs[j * st];
  });
}

void backward_input(const Conv2dGeometry& g, std::span<const float> gy, std::span<const float> weight,
                    std::span<float> gx) {
  const std::int64_t st = g.stride;
  for_each_run(g, [&](std::int64_t wi, std::int64_t xo, std::int64_t yo, std::int64_t count) {
    const float wv = weight[static_cast<std::size_t>(wi)];
    const float* gys = gy.data() + yo;
    float* gxs = gx.data() + xo;
    for (std::int64_t j = 0; j < count; ++j) gxs[j * st] += wv * gys[j];
  });
}

void backward_weight(const Conv2dGeometry& g, std::span<const float> gy, std::span<const float> x,
                     std::span<float> gweight, std::span<float> gbias) {
  const std::int64_t st = g.stride;
  for_each_run(g, [&](std::int64_t wi, std::int64_t xo, std::int64_t yo, std::int64_t count) {
    const float* gys = gy.data() + yo;
    const float* xs = x.data() + xo;
    float acc = 0.0F;
    for (std::int64_t j = 0; j < count; ++j) acc += gys[j] * xs[j * st];
    gweight[static_cast<std::size_t>(wi)] += acc;
  });
  if (gbias.empty()) return;
  const std::int64_t plane = g.oh * g.ow;
  for (std::int64_t i = 0; i < g.n * g.k; ++i) {
    const float* gys = gy.data() + i * plane;
    gbias[static_cast<std::size_t>(i % g.k)] += std::accumulate(gys, gys + plane, 0.0F);
  }
}

}  // namespace

const Conv2dKernels& conv2d_cpu_kernels() noexcept {
  static constexpr Conv2dKernels kernels{&forward, &backward_input, &backward_weight};
  return kernels;
}

}  // namespace glassbox::autograd::detail
