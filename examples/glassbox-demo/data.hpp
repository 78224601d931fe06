#pragma once
// Synthetic images the demo's network learns to classify: a bar or a
// diagonal at a random place in a noisy 16x16 image. Deterministic per seed.
#include <cstdint>
#include <random>
#include <vector>

#include "glassbox/autograd/shape.hpp"

namespace glassbox::demo {

/// Images [n, 1, size, size] row-major in host memory, and their classes.
struct Batch {
  autograd::Shape shape;
  std::vector<float> images;
  std::vector<std::int64_t> labels;
};

class SyntheticImages {
 public:
  static constexpr int kClasses = 4;  ///< horizontal bar, vertical bar, diagonal, anti-diagonal
  static constexpr int kSize = 16;

  explicit SyntheticImages(std::uint64_t seed) : rng_(seed) {}
  /// Throws glassbox::Error unless n >= 1.
  Batch next(int n);

 private:
  void draw(int label, float* image);

  std::mt19937_64 rng_;
};

}  // namespace glassbox::demo
