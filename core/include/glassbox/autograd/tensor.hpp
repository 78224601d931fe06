#pragma once
// A dense, contiguous float32 tensor with autograd metadata.
//
// Data lives in host memory, or, for a tensor on device d >= 0 once device
// kernels are installed (use_cuda()), in the memory of device d. Host reads of
// device memory (data()) throw: copy with to(x, kCpu) first; item() copies.
//
// Tensor is a shared handle: copies refer to the same TensorImpl, as a
// torch.Tensor does. Data lives in a Storage that detach() shares, together
// with the version counter, so an in-place change through any alias is seen
// by saved tensors (SavedTensor) that hold another alias.
//
// Thread-safety: reading data and metadata from many threads is safe.
// grad() and gradient accumulation are serialised by the tensor's own mutex.
// Writing data (in-place ops, mutable_data) while another thread reads it is a
// data race, as it is in PyTorch.
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "glassbox/autograd/device.hpp"
#include "glassbox/autograd/shape.hpp"

namespace glassbox::autograd {

class Node;
class TensorImpl;

/// Element buffer plus the version counter of every alias of it: host
/// values, or (device_data set) `numel` floats in the memory of `device`,
/// owned through the installed DeviceKernels.
struct Storage {
  /// Host values. A `device` other than kCpu marks the data of a device
  /// tensor kept in host memory (no device kernels installed); those are counted.
  explicit Storage(std::vector<float> values, int dev = kCpu);
  /// `numel` host values, each `value`.
  Storage(std::size_t numel, float value, int dev = kCpu);
  /// Uninitialised memory for `numel` floats on `device`, from the installed
  /// device kernels (which must exist).
  Storage(int device, std::size_t numel);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  /// Live storages of device tensors in host memory: device kernels may be
  /// installed only while there are none.
  static std::int64_t host_memory_on_devices() noexcept;

  /// The host values (empty for device memory).
  std::span<float> host() noexcept { return {far_.empty() ? near_.data() : far_.data(), size_}; }
  std::span<const float> host() const noexcept { return {far_.empty() ? near_.data() : far_.data(), size_}; }

  float* device_data = nullptr;
  int device = kCpu;
  std::atomic<std::uint32_t> version{0};

 private:
  // Up to kNear values live in the Storage itself, in near_ (far_ then
  // empty): a scalar (a loss, a scalar op's gradient) costs one allocation
  // less, on every node of a scalar graph's backward.
  static constexpr std::size_t kNear = 4;
  void count_if_on_device() noexcept;
  std::array<float, kNear> near_{};
  std::vector<float> far_;
  std::size_t size_ = 0;
};

class Tensor {
 public:
  /// An undefined tensor: what an absent gradient is.
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) noexcept : impl_(std::move(impl)) {}

  /// Throws glassbox::Error when values.size() differs from shape.numel().
  static Tensor from(Shape shape, std::vector<float> values, int device = kCpu);
  static Tensor full(Shape shape, float value, int device = kCpu);
  static Tensor zeros(Shape shape, int device = kCpu) { return full(shape, 0.0F, device); }
  static Tensor ones(Shape shape, int device = kCpu) { return full(shape, 1.0F, device); }
  static Tensor scalar(float value, int device = kCpu) { return full(Shape{}, value, device); }
  /// Values left unspecified (zeros in host memory): for results an op overwrites.
  static Tensor empty(Shape shape, int device = kCpu);

  bool defined() const noexcept { return impl_ != nullptr; }
  const Shape& shape() const noexcept;
  std::int64_t numel() const noexcept { return shape().numel(); }
  int device() const noexcept;
  /// Whether the values are in device memory (then data() throws).
  bool in_device_memory() const noexcept;
  /// Host values; throws glassbox::Error for a tensor in device memory.
  std::span<const float> data() const;
  /// For writing the values of a fresh tensor or an in-place op; the caller
  /// bumps the version when the tensor may already be saved somewhere.
  /// Throws glassbox::Error for a tensor in device memory.
  std::span<float> mutable_data() const;
  /// The single element (copied to the host, waiting for the device, if it
  /// is in device memory); throws glassbox::Error when numel() != 1.
  float item() const;

  bool requires_grad() const noexcept;
  /// Marks a leaf as needing a gradient; throws glassbox::Error on a non-leaf.
  Tensor& set_requires_grad(bool requires_grad);
  /// The node that produced this tensor (null for a leaf).
  const std::shared_ptr<Node>& grad_fn() const noexcept;
  /// Which input slot of grad_fn() receives this tensor's gradient.
  std::uint32_t output_nr() const noexcept;
  bool is_leaf() const noexcept { return grad_fn() == nullptr; }

  /// The accumulated gradient of a leaf (undefined until a backward reaches it).
  Tensor grad() const;
  void zero_grad() const;

  std::uint32_t version() const noexcept;
  /// Same data and version counter, no history, requires_grad false.
  Tensor detach() const;
  /// Fresh data with the same values, no history.
  Tensor clone() const;

  /// In place, bumping the version. Refused (glassbox::Error) on a tensor that
  /// requires grad while grad mode is on: in-place history is not recorded.
  Tensor& add_(const Tensor& other);
  Tensor& mul_(float factor);

  TensorImpl* impl() const noexcept { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const noexcept { return impl_; }

 private:
  std::shared_ptr<TensorImpl> impl_;
};

using TensorList = std::vector<Tensor>;

/// The state behind a Tensor handle. Ops and nodes use it directly.
class TensorImpl {
 public:
  TensorImpl(Shape s, int dev, std::shared_ptr<Storage> st) noexcept : shape(s), device(dev), storage(std::move(st)) {}

  const Shape shape;
  const int device;
  const std::shared_ptr<Storage> storage;

  // Autograd metadata: set while the tensor is built, read-only afterwards.
  bool requires_grad = false;
  std::shared_ptr<Node> grad_fn;
  std::uint32_t output_nr = 0;

  /// Guards grad and grad_accumulator.
  std::mutex mu;
  Tensor grad;
  /// Weak: the graph owns the accumulator; the leaf only finds it again.
  std::weak_ptr<Node> grad_accumulator;
};

}  // namespace glassbox::autograd
