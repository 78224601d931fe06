#pragma once
// The streams a block was used on since it was handed out, each once. The
// first lives in the block itself: nearly every block is used on one
// stream, and its record and its free then touch no memory beyond the
// block's own lines, where a vector's buffer was one line more, written at
// the record and read at the free between the driver's calls (each such
// line costs the caller's-stream pair 0.5-1.7 ns: bench/RESULTS.md,
// session 32).
#include <algorithm>
#include <cstdint>
#include <vector>

#include "glassbox/host_allocator/host_backend.hpp"

namespace glassbox::host_allocator {

class BlockStreams {
 public:
  std::size_t size() const noexcept { return count_; }
  bool empty() const noexcept { return count_ == 0; }
  StreamId front() const noexcept { return first_; }
  /// Adds `s`, unless it is in already.
  void add(StreamId s) {
    if (count_ == 0) [[likely]] {
      first_ = s;
      count_ = 1;
    } else if (s != first_) {
      add_more(s);
    }
  }
  void clear() noexcept {
    if (count_ > 1) more_.clear();
    count_ = 0;
  }
  /// Replaces `out` with them, the first first.
  void copy_to(std::vector<StreamId>& out) const {
    out.clear();
    if (count_ == 0) return;
    out.push_back(first_);
    out.insert(out.end(), more_.begin(), more_.end());
  }

 private:
  [[gnu::noinline]] void add_more(StreamId s) {
    if (std::find(more_.begin(), more_.end(), s) != more_.end()) return;
    more_.push_back(s);
    ++count_;
  }
  StreamId first_ = 0;  // StreamId 0 is a stream (CUDA's legacy default): count_ says
  std::uint32_t count_ = 0;
  std::vector<StreamId> more_;  // the rest, after the first
};

}  // namespace glassbox::host_allocator
