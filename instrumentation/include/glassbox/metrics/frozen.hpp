#pragma once
// An immutable container shared by every snapshot that reads it. A series'
// label pairs and a histogram's bucket bounds never change once made, so a
// scrape copies a pointer to them instead of the strings and vectors: at a
// thousand series those copies were half of what a snapshot cost.
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <utility>

namespace glassbox::metrics {

/// Reads like a const `Container` (iterate, index, compare); assigning a new
/// value replaces the shared one and never changes what another copy sees.
template <class Container>
class Frozen {
 public:
  using value_type = typename Container::value_type;
  using const_iterator = typename Container::const_iterator;
  using size_type = std::size_t;

  Frozen() = default;
  Frozen(Container value) : value_(std::make_shared<const Container>(std::move(value))) {}  // NOLINT: implicit
  Frozen(std::initializer_list<value_type> values) : Frozen(Container(values)) {}
  /// Shares `value` as it is; null reads as empty.
  explicit Frozen(std::shared_ptr<const Container> value) : value_(std::move(value)) {}

  const Container& get() const noexcept {
    static const Container empty;
    return value_ ? *value_ : empty;
  }
  operator const Container&() const noexcept { return get(); }  // NOLINT: implicit, reads as the container

  const_iterator begin() const noexcept { return get().begin(); }
  const_iterator end() const noexcept { return get().end(); }
  size_type size() const noexcept { return get().size(); }
  bool empty() const noexcept { return get().empty(); }
  const value_type& operator[](size_type i) const { return get()[i]; }
  const value_type& back() const { return get().back(); }

  friend bool operator==(const Frozen& a, const Frozen& b) { return a.get() == b.get(); }
  friend bool operator==(const Frozen& a, const Container& b) { return a.get() == b; }

 private:
  std::shared_ptr<const Container> value_;
};

}  // namespace glassbox::metrics
