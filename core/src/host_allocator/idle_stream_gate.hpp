#pragma once
// Which frees ask whether their stream has run everything queued on it
// (HostBackend::stream_done). The query costs about as much as the event it
// saves, so a stream found busy is left unasked for a while: the next
// 1, 3, 7, ... 63 of the thread's frees on it record their event without
// asking, and one found done is asked at every free again. Per thread, a few
// streams at once, by allocator and handle: a handle reused by a new stream
// only misleads the guess, never the block's safety (a query answers for the
// stream as it is).
#include <algorithm>
#include <array>
#include <cstdint>

#include "glassbox/host_allocator/host_backend.hpp"

namespace glassbox::host_allocator {

class IdleStreamGate {
 public:
  static constexpr std::uint32_t kMaxSkip = 63;

  // One stream's wait. Aligned so that no entry straddles a cache line.
  struct alignas(32) Entry {
    std::uint64_t owner = 0;
    StreamId stream = 0;
    // Whole words: two halfwords written together were read back as one
    // word, a store the load could not forward from (a stall at every free).
    std::uint32_t wait = 0;  // frees the last busy answer set to skip (0 after a done one)
    std::uint32_t skip = 0;  // of those, still to skip

    /// What the query found: done resets the wait, busy doubles it. A done
    /// answer with no wait to reset stores nothing (the common case).
    void answered(bool done) noexcept {
      if (done && wait == 0) return;
      wait = done ? 0 : std::min<std::uint32_t>(wait * 2u + 1u, kMaxSkip);
      skip = wait;
    }
  };

  /// The entry of this free on `stream`, by allocator `owner`, if it asks
  /// (answer it with Entry::answered); null where it skips, counted down.
  Entry* should_ask(std::uint64_t owner, StreamId stream) noexcept {
    Entry& e = entries_[(stream * 0x9E3779B97F4A7C15ULL) >> 62];  // the top bits: a handle's low bits are alignment
    if (e.owner != owner || e.stream != stream) {
      e = Entry{owner, stream, 0, 0};
      return &e;
    }
    if (e.skip == 0) return &e;
    --e.skip;
    return nullptr;
  }

 private:
  std::array<Entry, 4> entries_{};
};

}  // namespace glassbox::host_allocator
