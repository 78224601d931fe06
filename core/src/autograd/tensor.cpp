#include "glassbox/autograd/tensor.hpp"

#include <algorithm>
#include <string>

#include "glassbox/autograd/detail/pooled.hpp"
#include "glassbox/autograd/grad_mode.hpp"
#include "glassbox/error.hpp"
#include "tensor_math.hpp"

namespace glassbox::autograd {

namespace {

const TensorImpl& checked(const TensorImpl* impl) {
  if (impl == nullptr) throw Error("operation on an undefined tensor");
  return *impl;
}

void check_in_place_allowed(const Tensor& t, const char* op) {
  if (t.requires_grad() && GradMode::is_enabled()) {
    throw Error(std::string(op) +
                " on a tensor that requires grad: in-place changes are not recorded for backward; "
                "do it under NoGradGuard or on a tensor that does not require grad");
  }
}

void check_device(int device) {
  if (device < kCpu || device >= kMaxDevices) {
    throw Error("device " + std::to_string(device) + " is out of range: use kCpu (-1) or 0.." +
                std::to_string(kMaxDevices - 1));
  }
}

// Fresh device memory for `shape` when `device` keeps its tensors there, else null.
std::shared_ptr<Storage> device_storage(Shape shape, int device) {
  check_device(device);
  if (math::kernels_for(device) == nullptr) return nullptr;
  return detail::make_pooled<Storage>(device, static_cast<std::size_t>(shape.numel()));
}

void check_host(const TensorImpl& impl, const char* what) {
  if (impl.storage->device_data != nullptr) {
    throw Error(std::string(what) + " of a tensor in device memory on device " + device_name(impl.device) +
                ": copy it to the host first with to(x, kCpu)");
  }
}

}  // namespace

namespace {
std::atomic<std::int64_t> host_storages_on_devices{0};
}  // namespace

Storage::Storage(std::vector<float> values, int dev) : device(dev), far_(std::move(values)), size_(far_.size()) {
  count_if_on_device();
}

Storage::Storage(std::size_t numel, float value, int dev) : device(dev), size_(numel) {
  if (numel <= kNear) {
    std::fill_n(near_.begin(), numel, value);
  } else {
    far_.assign(numel, value);
  }
  count_if_on_device();
}

void Storage::count_if_on_device() noexcept {
  if (device != kCpu) host_storages_on_devices.fetch_add(1, std::memory_order_relaxed);
}

Storage::Storage(int dev, std::size_t numel) : device(dev) {
  device_data = installed_device_kernels()->allocate(dev, numel);
}

Storage::~Storage() {
  if (device_data != nullptr) {
    installed_device_kernels()->release(device, device_data);
  } else if (device != kCpu) {
    host_storages_on_devices.fetch_sub(1, std::memory_order_relaxed);
  }
}

std::int64_t Storage::host_memory_on_devices() noexcept {
  return host_storages_on_devices.load(std::memory_order_relaxed);
}

Tensor Tensor::from(Shape shape, std::vector<float> values, int device) {
  if (static_cast<std::int64_t>(values.size()) != shape.numel()) {
    throw Error("tensor of shape " + shape.str() + " needs " + std::to_string(shape.numel()) + " values, got " +
                std::to_string(values.size()));
  }
  if (auto storage = device_storage(shape, device)) {
    math::kernels_for(device)->copy_from_host(device, values.data(), storage->device_data, values.size());
    return Tensor(detail::make_pooled<TensorImpl>(shape, device, std::move(storage)));
  }
  return Tensor(
      detail::make_pooled<TensorImpl>(shape, device, detail::make_pooled<Storage>(std::move(values), device)));
}

Tensor Tensor::full(Shape shape, float value, int device) {
  if (auto storage = device_storage(shape, device)) {
    math::kernels_for(device)->fill(device, storage->device_data, static_cast<std::size_t>(shape.numel()), value);
    return Tensor(detail::make_pooled<TensorImpl>(shape, device, std::move(storage)));
  }
  return Tensor(detail::make_pooled<TensorImpl>(
      shape, device, detail::make_pooled<Storage>(static_cast<std::size_t>(shape.numel()), value, device)));
}

Tensor Tensor::empty(Shape shape, int device) {
  if (auto storage = device_storage(shape, device)) {
    return Tensor(detail::make_pooled<TensorImpl>(shape, device, std::move(storage)));
  }
  return zeros(shape, device);
}

const Shape& Tensor::shape() const noexcept { return impl_->shape; }
int Tensor::device() const noexcept { return impl_->device; }
bool Tensor::in_device_memory() const noexcept { return impl_->storage->device_data != nullptr; }

std::span<const float> Tensor::data() const {
  check_host(checked(impl_.get()), "data()");
  return impl_->storage->host();
}

std::span<float> Tensor::mutable_data() const {
  check_host(checked(impl_.get()), "mutable_data()");
  return impl_->storage->host();
}

float Tensor::item() const {
  const TensorImpl& impl = checked(impl_.get());
  if (impl.shape.numel() != 1) throw Error("item() of a tensor of shape " + impl.shape.str());
  if (DeviceKernels* k = math::kernels_of(*this)) {
    float value = 0.0F;
    k->copy_to_host(impl.device, impl.storage->device_data, &value, 1);
    return value;
  }
  return impl.storage->host()[0];
}

bool Tensor::requires_grad() const noexcept { return impl_ && impl_->requires_grad; }

Tensor& Tensor::set_requires_grad(bool requires_grad) {
  checked(impl_.get());
  if (!is_leaf()) throw Error("set_requires_grad on a non-leaf tensor: use detach() to make a leaf");
  impl_->requires_grad = requires_grad;
  return *this;
}

const std::shared_ptr<Node>& Tensor::grad_fn() const noexcept {
  static const std::shared_ptr<Node> none;
  return impl_ ? impl_->grad_fn : none;
}

std::uint32_t Tensor::output_nr() const noexcept { return impl_ ? impl_->output_nr : 0; }

Tensor Tensor::grad() const {
  std::lock_guard lock(impl_->mu);
  return impl_->grad;
}

void Tensor::zero_grad() const {
  std::lock_guard lock(impl_->mu);
  impl_->grad = Tensor();
}

std::uint32_t Tensor::version() const noexcept { return impl_->storage->version.load(std::memory_order_acquire); }

Tensor Tensor::detach() const {
  const TensorImpl& impl = checked(impl_.get());
  return Tensor(detail::make_pooled<TensorImpl>(impl.shape, impl.device, impl.storage));
}

Tensor Tensor::clone() const {
  const TensorImpl& impl = checked(impl_.get());
  if (DeviceKernels* k = math::kernels_of(*this)) {
    Tensor out = empty(impl.shape, impl.device);
    k->copy(impl.device, math::ptr(*this), impl.device, math::mutable_ptr(out), static_cast<std::size_t>(numel()));
    return out;
  }
  std::span<const float> values = impl.storage->host();
  return from(impl.shape, std::vector<float>(values.begin(), values.end()), impl.device);
}

Tensor& Tensor::add_(const Tensor& other) {
  check_in_place_allowed(*this, "add_");
  if (other.shape() != shape() || other.device() != device()) {
    throw Error("add_: shapes " + shape().str() + " and " + other.shape().str() + " or devices differ");
  }
  math::accumulate(*this, other);
  impl_->storage->version.fetch_add(1, std::memory_order_release);
  return *this;
}

Tensor& Tensor::mul_(float factor) {
  check_in_place_allowed(*this, "mul_");
  math::unary_in_place(UnaryOp::scale, *this, factor);
  impl_->storage->version.fetch_add(1, std::memory_order_release);
  return *this;
}

}  // namespace glassbox::autograd
