#pragma once
// Scratch memory for the cuDNN calls of one CudnnState. It only grows:
// cuDNN asks for workspace per call, and a state that served a large
// convolution once will likely serve it again, so shrinking would only buy
// a reallocation later. reset() gives the memory back.
//
// Ownership: owns its block; the state owns the workspace.
// Thread-safety: none; use it inside the state's execute (under its lock).
// Stream: the block is for work queued on the state's stream. Growing frees
// the old block in that stream's order, so work already queued with the old
// pointer still finishes safely; new work must use the pointer get() returns.
#include <cstddef>
#include <utility>

#include "glassbox/cudnn/cudnn_backend.hpp"
#include "glassbox/cudnn/cudnn_instrumentation.hpp"

namespace glassbox::cudnn {

template <CudnnBackend B>
class CudnnWorkspace {
 public:
  using stream_type = typename B::stream_type;

  CudnnWorkspace(B& backend, int device, stream_type stream, WorkspaceSeries series) noexcept
      : backend_(backend), device_(device), stream_(stream), series_(std::move(series)) {}
  ~CudnnWorkspace() { reset(); }
  CudnnWorkspace(const CudnnWorkspace&) = delete;
  CudnnWorkspace& operator=(const CudnnWorkspace&) = delete;

  /// At least `nbytes` of scratch. Allocates only when larger than any
  /// earlier request since the last reset(); if that allocation throws, the
  /// current block stays valid.
  void* get(std::size_t nbytes) {
    if (nbytes > size_) grow(nbytes);
    return data_;
  }

  /// Frees the block (stream-ordered); the next get() allocates again.
  void reset() noexcept {
    if (data_ == nullptr) return;
    backend_.deallocate(device_, data_, size_, stream_);
    series_.bytes.sub(static_cast<double>(size_));
    data_ = nullptr;
    size_ = 0;
  }

  std::size_t size() const noexcept { return size_; }

 private:
  void grow(std::size_t nbytes) {
    void* fresh = backend_.allocate(device_, nbytes, stream_);
    reset();
    data_ = fresh;
    size_ = nbytes;
    series_.bytes.add(static_cast<double>(nbytes));
    series_.resizes.inc();
  }

  B& backend_;
  const int device_;
  const stream_type stream_;
  const WorkspaceSeries series_;
  void* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace glassbox::cudnn
