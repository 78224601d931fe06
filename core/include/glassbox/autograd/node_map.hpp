#pragma once
// A hash map from node address to a small value, for the per-backward
// bookkeeping that touches every node once or twice (dependency counts).
// Open addressing with linear probing in one array: no allocation per entry,
// which std::unordered_map would make for each of a graph's nodes.
// No erase (clear() empties it); not thread-safe (its owner's lock guards it).
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace glassbox::autograd {

class Node;

template <class V>
class NodeMap {
 public:
  /// The value for `key`, value-initialised when new, and whether it is new.
  std::pair<V*, bool> try_emplace(const Node* key) {
    if ((size_ + 1) * 2 > slots_.size()) grow();
    Slot& s = slots_[probe(key)];
    bool fresh = s.key == nullptr;
    if (fresh) {
      s.key = key;
      ++size_;
    }
    return {&s.value, fresh};
  }

  /// Null when absent.
  V* find(const Node* key) { return const_cast<V*>(std::as_const(*this).find(key)); }
  const V* find(const Node* key) const {
    if (slots_.empty()) return nullptr;
    const Slot& s = slots_[probe(key)];
    return s.key ? &s.value : nullptr;
  }

  std::size_t size() const noexcept { return size_; }

  /// Removes every key. The slots stay for the next graph unless there are
  /// more than kKeptSlots (a huge graph's table is not held on to).
  void clear() {
    if (slots_.size() > kKeptSlots) {
      slots_ = {};
    } else if (size_ != 0) {
      for (Slot& s : slots_) {
        if (s.key) s = Slot{};
      }
    }
    size_ = 0;
  }
  /// The most slots any key's lookup reads (1: every key in its home slot):
  /// what the choice of home slot costs at worst, for tests and diagnostics.
  std::size_t longest_probe() const {
    std::size_t longest = 0;
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      if (slots_[i].key) longest = std::max(longest, ((i - home(slots_[i].key)) & (slots_.size() - 1)) + 1);
    }
    return longest;
  }

  static constexpr std::size_t kKeptSlots = std::size_t{1} << 16;
  /// A nested backward's graph is a node or two: a small table is cleared fast.
  static constexpr std::size_t kMinSlots = 8;

  /// Room for `n` keys without growing; only before the first key.
  void reserve(std::size_t n) {
    if (size_ == 0 && n * 2 > slots_.size())
      slots_ = std::vector<Slot>(std::bit_ceil(std::max<std::size_t>(kMinSlots, n * 2)));
  }

 private:
  struct Slot {
    const Node* key = nullptr;
    V value{};
  };

  // The slot holding `key`, or the empty one where it would go.
  std::size_t probe(const Node* key) const {
    std::size_t mask = slots_.size() - 1;
    for (std::size_t i = home(key) & mask;; i = (i + 1) & mask) {
      if (slots_[i].key == key || slots_[i].key == nullptr) return i;
    }
  }

  // Where `key`'s probe starts: its 64-byte line of address space, counted
  // within a span of as many lines as there are slots, plus a hashed offset
  // for the span. A graph is mostly built from fresh heap, one node after the
  // next, and a backward walks it in reverse build order twice (the count,
  // then the run), so slots that follow the addresses make the walks' lookups
  // one near-sequential sweep the prefetchers follow; a scattering hash made
  // each lookup a miss once the table outgrew the cache (bench/RESULTS.md,
  // session 37). A node takes two lines or more (asserted in node.cpp), so a
  // graph's nodes, however densely laid out, fill at most every other home
  // slot of their span; the hashed span offset keeps spans of a large or
  // scattered graph from piling onto the same slots (Fibonacci hashing: the
  // product's upper half mixes every bit of the span number).
  std::size_t home(const Node* key) const {
    auto line = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(key)) >> kLineBits;
    std::uint64_t span = line >> std::countr_zero(slots_.size());
    return static_cast<std::size_t>(line + ((span * 0x9E3779B97F4A7C15ULL) >> 32));
  }
  static constexpr int kLineBits = 6;

  void grow() {
    std::vector<Slot> old =
        std::exchange(slots_, std::vector<Slot>(std::max<std::size_t>(kMinSlots, slots_.size() * 2)));
    for (Slot& s : old) {
      if (s.key) slots_[probe(s.key)] = std::move(s);
    }
  }

  std::vector<Slot> slots_;
  std::size_t size_ = 0;
};

}  // namespace glassbox::autograd
