#pragma once
// One histogram bucket's latest exemplar: the trace and span an observation
// was made in, so a scrape can point from a latency bucket to a trace. Written
// without a lock by whichever thread observes inside a sampled span, read by
// scrapes; a seqlock, so a reader never sees half of one exemplar and half of
// another.
#include <atomic>
#include <cstdint>
#include <optional>

#include "glassbox/metrics/snapshot.hpp"
#include "glassbox/trace/span_context.hpp"

namespace glassbox::metrics::detail {

/// Thread-safety: record() and read() from any number of threads at once.
/// Two record() calls racing on one slot keep one of the two: the other
/// returns at once rather than wait, and its exemplar is no less recent than
/// the one kept. A read() that keeps meeting writers answers nullopt; the next
/// scrape reads the slot again.
class ExemplarSlot {
 public:
  /// Keeps `context`'s ids, `value` and the wall-clock time now.
  void record(const trace::SpanContext& context, double value) noexcept;
  /// The latest exemplar, labelled trace_id and span_id in hex; nullopt when
  /// none was recorded yet.
  std::optional<Exemplar> read() const;
  /// Whether an exemplar was ever recorded: most slots never get one, and a
  /// scrape asks here before it calls read().
  bool recorded() const noexcept { return seq_.load(std::memory_order_acquire) != 0; }

 private:
  std::atomic<std::uint64_t> seq_{0};  // odd while a writer is in; 0 until the first write
  // Trace id (two words), span id, value and timestamp bits.
  std::atomic<std::uint64_t> words_[5] = {};
};

}  // namespace glassbox::metrics::detail
