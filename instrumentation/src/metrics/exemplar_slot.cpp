#include "glassbox/metrics/exemplar_slot.hpp"

#include <bit>
#include <chrono>
#include <cstring>

namespace glassbox::metrics::detail {

namespace {

template <std::size_t N>
std::array<std::uint8_t, N> bytes_of(const std::atomic<std::uint64_t>* words) {
  std::uint64_t w[N / 8];
  for (std::size_t i = 0; i < N / 8; ++i) w[i] = words[i].load(std::memory_order_relaxed);
  std::array<std::uint8_t, N> out;
  std::memcpy(out.data(), w, N);
  return out;
}

template <std::size_t N>
void store_bytes(std::atomic<std::uint64_t>* words, const std::array<std::uint8_t, N>& bytes) {
  std::uint64_t w[N / 8];
  std::memcpy(w, bytes.data(), N);
  for (std::size_t i = 0; i < N / 8; ++i) words[i].store(w[i], std::memory_order_relaxed);
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

// The seqlock of Boehm's "Can seqlocks get along with programming language
// memory models?": relaxed data words between a release fence after the odd
// count and a release store of the even one.
void ExemplarSlot::record(const trace::SpanContext& context, double value) noexcept {
  std::uint64_t seq = seq_.load(std::memory_order_relaxed);
  if ((seq & 1) != 0 || !seq_.compare_exchange_strong(seq, seq + 1, std::memory_order_relaxed)) return;
  std::atomic_thread_fence(std::memory_order_release);
  store_bytes(&words_[0], context.trace_id.bytes);
  store_bytes(&words_[2], context.span_id.bytes);
  words_[3].store(std::bit_cast<std::uint64_t>(value), std::memory_order_relaxed);
  words_[4].store(std::bit_cast<std::uint64_t>(now_seconds()), std::memory_order_relaxed);
  seq_.store(seq + 2, std::memory_order_release);
}

std::optional<Exemplar> ExemplarSlot::read() const {
  constexpr int kTries = 16;
  for (int i = 0; i < kTries; ++i) {
    std::uint64_t before = seq_.load(std::memory_order_acquire);
    if (before == 0) return std::nullopt;
    if ((before & 1) != 0) continue;
    trace::TraceId trace{bytes_of<16>(&words_[0])};
    trace::SpanId span{bytes_of<8>(&words_[2])};
    double value = std::bit_cast<double>(words_[3].load(std::memory_order_relaxed));
    double timestamp = std::bit_cast<double>(words_[4].load(std::memory_order_relaxed));
    std::atomic_thread_fence(std::memory_order_acquire);
    if (seq_.load(std::memory_order_relaxed) != before) continue;
    return Exemplar{{{"trace_id", trace.hex()}, {"span_id", span.hex()}}, value, timestamp};
  }
  return std::nullopt;
}

}  // namespace glassbox::metrics::detail
