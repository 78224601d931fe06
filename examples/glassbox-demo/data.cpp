#include "data.hpp"

#include <string>

#include "glassbox/error.hpp"

namespace glassbox::demo {

Batch SyntheticImages::next(int n) {
  if (n < 1) throw Error("batch size " + std::to_string(n) + ": must be at least 1");
  constexpr std::size_t pixels = kSize * kSize;
  Batch b{autograd::Shape{n, 1, kSize, kSize}, std::vector<float>(static_cast<std::size_t>(n) * pixels), {}};
  std::uniform_int_distribution<int> label(0, kClasses - 1);
  for (int i = 0; i < n; ++i) {
    b.labels.push_back(label(rng_));
    draw(static_cast<int>(b.labels.back()), b.images.data() + static_cast<std::size_t>(i) * pixels);
  }
  return b;
}

// Noise everywhere, then a two-pixel-wide stroke across the image through a
// random offset; the class decides the stroke's direction.
void SyntheticImages::draw(int label, float* image) {
  std::normal_distribution<float> noise(0.0F, 0.35F);
  std::uniform_int_distribution<int> offset(2, kSize - 3);
  for (int p = 0; p < kSize * kSize; ++p) image[p] = noise(rng_);
  const int at = offset(rng_);
  for (int i = 0; i < kSize; ++i) {
    for (int w = 0; w < 2; ++w) {
      int row = 0, col = 0;
      switch (label) {
        case 0:
          row = at + w, col = i;
          break;  // horizontal
        case 1:
          row = i, col = at + w;
          break;  // vertical
        case 2:
          row = i, col = (i + at + w) % kSize;
          break;  // diagonal, wrapping
        default:
          row = i, col = (kSize - 1 - i + at + w) % kSize;
          break;  // anti-diagonal, wrapping
      }
      image[row * kSize + col] += 1.0F;
    }
  }
}

}  // namespace glassbox::demo
