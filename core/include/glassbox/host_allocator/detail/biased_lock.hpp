#pragma once
// A lock biased towards one owner thread, for a thread's own cache: the owner
// enters and leaves with plain loads and stores (no atomic read-modify-write,
// no fence instruction), and the rare other thread that must reach in
// (empty_cache(), stats()) pays instead, with a process-wide memory barrier
// (Linux membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED).
//
// The two sides form a Dekker handshake: the owner writes `owner_in_` then
// reads `remote_wants_`; a remote writes `remote_wants_` then reads
// `owner_in_`. Each side needs its write ordered before its read. The remote
// gets that from membarrier, which runs a full barrier on every CPU running a
// thread of this process, so the owner's side needs only a compiler barrier.
// Where membarrier is missing (old kernel, seccomp), both sides fall back to
// sequentially consistent atomics: correct, and as costly as a spin lock.
#include <atomic>
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
    if (asymmetric_) [[likely]] {
      owner_in_.store(true, std::memory_order_relaxed);
      std::atomic_signal_fence(std::memory_order_seq_cst);
    } else {
      owner_in_.exchange(true, std::memory_order_seq_cst);
    }
    if (!remote_wants_.load(std::memory_order_seq_cst)) return true;
    owner_in_.store(false, std::memory_order_release);
    return false;
  }
  void owner_unlock() noexcept { owner_in_.store(false, std::memory_order_release); }

  /// The remote side, in three steps so that one heavy fence serves many
  /// locks: request() each, then heavy_fence() once if asymmetric_fences(),
  /// then wait_for_owner() on each (the owner leaves within a few
  /// instructions); remote_unlock() when done. Remote holders must exclude
  /// one another by other means (the allocator's caches_mu).
  void request() noexcept { remote_wants_.store(true, std::memory_order_seq_cst); }
  void wait_for_owner() const noexcept {
    while (owner_in_.load(std::memory_order_seq_cst)) std::this_thread::yield();
  }
  void remote_unlock() noexcept { remote_wants_.store(false, std::memory_order_release); }

 private:
  // asymmetric_fences(), read once here: the owner's every entry would
  // otherwise check the function-local static's guard first.
  const bool asymmetric_ = asymmetric_fences();
  std::atomic<bool> owner_in_{false};
  std::atomic<bool> remote_wants_{false};
};

}  // namespace glassbox::host_allocator::detail
