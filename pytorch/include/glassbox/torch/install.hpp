#pragma once
// Registers glassbox's pinned-host allocator as PyTorch's for CUDA
// (at::setHostAllocator), above PyTorch's own.
//
// Installing after PyTorch's allocator handed out pinned memory is safe:
// each DataPtr carries its allocator's deleter, so PyTorch's blocks still go
// back to PyTorch's allocator when freed; record_event() on one of them is
// passed on to it, and empty_cache() empties both. Only new allocations come
// from glassbox, and only they are in get_stats().
#include <cstdint>

#include "glassbox/torch/torch_host_allocator.hpp"

namespace glassbox::torch {

/// at::setHostAllocator's priority: PyTorch registers its own at 0.
inline constexpr std::uint8_t kInstallPriority = 1;

/// Installs once per process (later calls return the same allocator). The
/// allocator is configured from GLASSBOX_HOST_ALLOC_CONF, reports to
/// metrics::Registry::global(), and lives until the process exits. Throws
/// glassbox::Error when another allocator of higher priority stays
/// registered, and ConfigError for a malformed GLASSBOX_HOST_ALLOC_CONF.
TorchHostAllocator& install();

/// The installed allocator, or null before install().
TorchHostAllocator* installed() noexcept;

}  // namespace glassbox::torch
