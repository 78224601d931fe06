#pragma once
// A lock biased towards one owner thread, for a thread's own cache: the owner
// enters and leaves with plain loads and stores (no atomic read-modify-write,
// no fence instruction), and the rare other thread that must reach in
// (empty_cache(), stats()) pays instead, with a process-wide memory barrier
// (Linux membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED).
//
// The two sides form a Dekker handshake: the owner writes `owner_in_` then
// reads `gate_`; a remote writes `gate_` then reads `owner_in_`. Each side
// needs its write ordered before its read. The remote gets that from
// membarrier, which runs a full barrier on every CPU running a thread of this
// process, so the owner's side needs only a compiler barrier. Where
// membarrier is missing (old kernel, seccomp), both sides fall back to
// sequentially consistent atomics: correct, and as costly as a spin lock.
#include <atomic>
#include <cstdint>
#include <thread>

namespace glassbox::host_allocator::detail {

/// Registers this process for membarrier's private expedited command; false
/// where the kernel or a seccomp filter refuses it.
bool register_membarrier() noexcept;

/// GLASSBOX_NO_MEMBARRIER set (and not "0"): use the fallback. Each heavy
/// fence interrupts every CPU running a thread of the process, which a
/// latency-sensitive process may prefer to pay for with atomics instead.
bool membarrier_turned_off() noexcept;

/// Whether membarrier is in use. Decided once, on first use; every
/// BiasedLock's both sides read the same value.
inline bool asymmetric_fences() noexcept {
  static const bool on = !membarrier_turned_off() && register_membarrier();
  return on;
}

/// The remote side's barrier: a full barrier on every thread of the process.
void heavy_fence() noexcept;

class BiasedLock {
 public:
  /// Owner thread only. False while a remote holds the lock: the owner then
  /// uses the shared path instead of waiting.
  bool owner_try_lock() noexcept {
    owner_in_.store(true, std::memory_order_relaxed);
    std::atomic_signal_fence(std::memory_order_seq_cst);
    if (gate_.load(std::memory_order_seq_cst) == 0) [[likely]]
      return true;
    return owner_try_lock_fenced();
  }
  void owner_unlock() noexcept { owner_in_.store(false, std::memory_order_release); }

  /// The remote side, in three steps so that one heavy fence serves many
  /// locks: request() each, then heavy_fence() once if asymmetric_fences(),
  /// then wait_for_owner() on each (the owner leaves within a few
  /// instructions); remote_unlock() when done. Remote holders must exclude
  /// one another by other means (the allocator's caches_mu).
  void request() noexcept { gate_.store(idle_gate_ | kRemoteWants, std::memory_order_seq_cst); }
  void wait_for_owner() const noexcept {
    while (owner_in_.load(std::memory_order_seq_cst)) std::this_thread::yield();
  }
  void remote_unlock() noexcept { gate_.store(idle_gate_, std::memory_order_release); }

 private:
  static constexpr std::uint8_t kRemoteWants = 1;
  // Set for good where asymmetric_fences() is off: every owner entry then
  // leaves the plain path for owner_try_lock_fenced(). One byte for both, so
  // that the owner's entry reads one flag and tests it once.
  static constexpr std::uint8_t kOwnerFences = 2;

  // The owner's entry past the plain path: a remote wants the lock, or the
  // owner must fence its entry itself (no membarrier).
  bool owner_try_lock_fenced() noexcept {
    if (gate_.load(std::memory_order_relaxed) == kOwnerFences) {
      owner_in_.exchange(true, std::memory_order_seq_cst);
      if ((gate_.load(std::memory_order_seq_cst) & kRemoteWants) == 0) return true;
    }
    owner_in_.store(false, std::memory_order_release);
    return false;
  }

  const std::uint8_t idle_gate_ = asymmetric_fences() ? 0 : kOwnerFences;
  std::atomic<bool> owner_in_{false};
  std::atomic<std::uint8_t> gate_{idle_gate_};
};

}  // namespace glassbox::host_allocator::detail
