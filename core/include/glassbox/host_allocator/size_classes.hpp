#pragma once
// How request sizes round up to cached block sizes. pow2 (PyTorch's rule)
// rounds to the next power of two: up to 50 % waste. pow2x4 splits each
// power of two into four steps (2^k, 1.25, 1.5, 1.75 x 2^k): under 25 % waste,
// at the price of four times as many free lists.
#include <bit>
#include <cstddef>
#include <cstdint>

namespace glassbox::host_allocator {

enum class SizeClassPolicy { pow2, pow2x4 };

class SizeClasses {
 public:
  /// Largest request accepted: 2^62 bytes.
  static constexpr std::size_t kMaxRequest = std::size_t{1} << 62;
  static constexpr std::size_t kCount = 4 * 64;  ///< indices used by either policy stay below this

  explicit constexpr SizeClasses(SizeClassPolicy policy) noexcept : policy_(policy) {}

  /// Class index of a request (1 <= size <= kMaxRequest). Any other size (0,
  /// or above kMaxRequest) gets an index above index(kMaxRequest) and below
  /// kCount: a class no block has, so a lookup by it finds nothing.
  constexpr std::uint32_t index(std::size_t size) const noexcept {
    if (policy_ == SizeClassPolicy::pow2) [[likely]]  // the default: inline, the other one jumps
      return static_cast<std::uint32_t>(std::bit_width(size - 1));
    if (size - 1 < 4) return static_cast<std::uint32_t>(size - 1);     // 1, 2, 3, 4: exact
    unsigned k = static_cast<unsigned>(std::bit_width(size - 1)) - 1;  // 2^k < size <= 2^(k+1)
    std::size_t step = std::size_t{1} << (k - 2);
    std::size_t j = (size - (std::size_t{1} << k) + step - 1) / step;  // 1..4
    return static_cast<std::uint32_t>(4 * (k - 2) + j + 3);
  }

  /// Block size of a class.
  std::size_t size(std::uint32_t index) const noexcept {
    if (policy_ == SizeClassPolicy::pow2) return std::size_t{1} << index;
    if (index < 4) return index + 1;
    std::uint32_t step_index = index - 3;
    unsigned k = step_index / 4 + 2;
    return (std::size_t{1} << k) + (step_index % 4) * (std::size_t{1} << (k - 2));
  }

  /// The `bucket` metric label: log2 of the block size, rounded down.
  unsigned bucket(std::uint32_t index) const noexcept { return static_cast<unsigned>(std::bit_width(size(index))) - 1; }

  SizeClassPolicy policy() const noexcept { return policy_; }

 private:
  SizeClassPolicy policy_;
};

}  // namespace glassbox::host_allocator
