#include "glassbox/autograd/saved_tensor.hpp"

#include <string>

#include "glassbox/error.hpp"

namespace glassbox::autograd {

SavedTensor::SavedTensor(const Tensor& t)
    : data_(t.defined() ? t.detach() : Tensor()),
      saved_version_(t.defined() ? t.version() : 0),
      was_defined_(t.defined()) {}

Tensor SavedTensor::unpack(const char* node) const {
  if (!was_defined_) return Tensor();
  if (!data_.defined()) {
    throw Error(std::string("backward through '") + node +
                "' a second time: its saved tensors were freed after the first backward; pass keep_graph=true to "
                "the first backward to keep them");
  }
  if (std::uint32_t now = data_.version(); now != saved_version_) {
    throw Error(std::string("a tensor saved by '") + node + "' was modified in place: it is at version " +
                std::to_string(now) + ", it was saved at version " + std::to_string(saved_version_) +
                "; clone it before changing it, or change it after backward");
  }
  return data_;
}

void SavedTensor::release() noexcept { data_ = Tensor(); }

}  // namespace glassbox::autograd
