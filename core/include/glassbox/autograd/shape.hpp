#pragma once
// The sizes of a dense tensor. Dimensions are stored inline (at most
// kMaxDims), so a small tensor's metadata costs no allocation of its own:
// backward passes create many one-element tensors.
#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

namespace glassbox::autograd {

class Shape {
 public:
  static constexpr std::size_t kMaxDims = 4;

  /// A 0-d (scalar) shape with one element.
  Shape() = default;
  /// Throws glassbox::Error for more than kMaxDims dimensions or a negative size.
  Shape(std::initializer_list<std::int64_t> dims);

  std::size_t ndim() const noexcept { return ndim_; }
  std::int64_t operator[](std::size_t i) const noexcept { return dims_[i]; }
  std::int64_t numel() const noexcept;
  /// "[2, 3]"; "[]" for a scalar.
  std::string str() const;

  friend bool operator==(const Shape& a, const Shape& b) noexcept {
    if (a.ndim_ != b.ndim_) return false;
    for (std::size_t i = 0; i < a.ndim_; ++i) {
      if (a.dims_[i] != b.dims_[i]) return false;
    }
    return true;
  }

 private:
  std::array<std::int64_t, kMaxDims> dims_{};
  std::uint8_t ndim_ = 0;
};

}  // namespace glassbox::autograd
