#include "glassbox/autograd/shape.hpp"

#include <string>

#include "glassbox/error.hpp"

namespace glassbox::autograd {

Shape::Shape(std::initializer_list<std::int64_t> dims) {
  if (dims.size() > kMaxDims) {
    throw Error("tensor of " + std::to_string(dims.size()) + " dimensions: at most " + std::to_string(kMaxDims) +
                " are supported");
  }
  for (std::int64_t d : dims) {
    if (d < 0) throw Error("negative tensor size " + std::to_string(d));
    dims_[ndim_++] = d;
  }
}

std::int64_t Shape::numel() const noexcept {
  std::int64_t n = 1;
  for (std::size_t i = 0; i < ndim_; ++i) n *= dims_[i];
  return n;
}

std::string Shape::str() const {
  std::string s = "[";
  for (std::size_t i = 0; i < ndim_; ++i) s += (i ? ", " : "") + std::to_string(dims_[i]);
  return s + "]";
}

}  // namespace glassbox::autograd
