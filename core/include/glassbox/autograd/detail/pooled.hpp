#pragma once
// Per-thread free lists for the graph's small objects: tensors, their
// storages, nodes and their edge lists. A forward + backward makes and frees
// one of each per op; in a process that has started a thread, glibc's free
// of them takes its locked path once its own per-thread cache (7 of a size)
// is full, which a chain of 1 000 ops overflows at once: 14 % of a 1-thread
// forward + backward was glibc's _int_free on the development machine,
// against 7 % before any thread started. A chunk freed here is kept for this
// thread's next object of its size, up to kMaxPooledBytes a size; the rest go
// back to the heap, and so do a thread's kept chunks when it exits.
//
// Under AddressSanitizer nothing is kept: a use after free of a graph object
// must reach the sanitizer as one, not find a kept chunk.
//
// detail/: the engine's own, public because EdgeList (edge.hpp) names its
// allocator, and so that its tests can reach it.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <utility>

namespace glassbox::autograd::detail {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kPoolChunks = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kPoolChunks = false;
#else
inline constexpr bool kPoolChunks = true;
#endif
#else
inline constexpr bool kPoolChunks = true;
#endif

/// What a thread keeps of one chunk size at most.
inline constexpr std::size_t kMaxPooledBytes = 256 << 10;
/// Larger objects are not pooled (no graph object is).
inline constexpr std::size_t kMaxPooledChunk = 512;

/// Has `drain` called when the calling thread exits (at most 32 sizes a
/// thread); false when the thread is exiting already.
bool drain_at_thread_exit(void (*drain)() noexcept);

/// The calling thread's free chunks of `Size` bytes (a multiple of 16).
template <std::size_t Size>
class ThreadChunks {
 public:
  static void* take() {
    List& l = list;
    if (Chunk* c = l.head) {
      l.head = c->next;
      --l.count;
      return c;
    }
    return ::operator new(Size);
  }

  static void give(void* p) noexcept {
    List& l = list;
    if (kPoolChunks && l.state == State::fresh) {
      l.state = drain_at_thread_exit(&drain) ? State::live : State::drained;
    }
    if (!kPoolChunks || l.state == State::drained || l.count >= kMaxChunks) {
      ::operator delete(p);
      return;
    }
    l.head = ::new (p) Chunk{l.head};
    ++l.count;
  }

  /// Chunks kept now on the calling thread (for tests).
  static std::uint32_t kept() noexcept { return list.count; }

 private:
  static constexpr std::uint32_t kMaxChunks = kMaxPooledBytes / Size;
  struct Chunk {
    Chunk* next;
  };
  // drained: the thread is exiting; what it frees from now on goes back.
  enum class State : std::uint8_t { fresh, live, drained };
  struct List {
    Chunk* head = nullptr;
    std::uint32_t count = 0;
    State state = State::fresh;
  };
  static void drain() noexcept {
    List& l = list;
    l.state = State::drained;
    while (Chunk* c = l.head) {
      l.head = c->next;
      ::operator delete(c);
    }
    l.count = 0;
  }
  // Trivially destructible: usable by a thread's later destructors.
  static inline constinit thread_local List list{};
};

/// An allocator whose single objects, and arrays of up to kPooledCount, come
/// from ThreadChunks: for std::allocate_shared, which sizes the chunk to the
/// object and its counts, and for a node's short edge list.
template <class T>
struct PooledAllocator {
  using value_type = T;
  static constexpr std::size_t kPooledCount = 4;
  PooledAllocator() = default;
  template <class U>
  PooledAllocator(const PooledAllocator<U>& /*other*/) noexcept {}  // NOLINT(google-explicit-constructor)

  T* allocate(std::size_t n) {
    if (void* p = take<1>(n)) return static_cast<T*>(p);
    return std::allocator<T>().allocate(n);
  }
  void deallocate(T* p, std::size_t n) noexcept {
    if (!give<1>(p, n)) std::allocator<T>().deallocate(p, n);
  }
  friend bool operator==(PooledAllocator /*a*/, PooledAllocator /*b*/) noexcept { return true; }

 private:
  static constexpr std::size_t chunk(std::size_t n) { return (n * sizeof(T) + 15) / 16 * 16; }
  static constexpr bool pooled(std::size_t n) {
    return chunk(n) <= kMaxPooledChunk && alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__;
  }
  // n objects from (take) or back to (give) the pool of their chunk size,
  // trying N = 1, 2, ... kPooledCount; nullptr or false where n is not pooled.
  template <std::size_t N>
  static void* take(std::size_t n) {
    if constexpr (N > kPooledCount || !pooled(N)) {
      return nullptr;
    } else {
      return n == N ? ThreadChunks<chunk(N)>::take() : take<N + 1>(n);
    }
  }
  template <std::size_t N>
  static bool give(void* p, std::size_t n) noexcept {
    if constexpr (N > kPooledCount || !pooled(N)) {
      return false;
    } else {
      if (n != N) return give<N + 1>(p, n);
      ThreadChunks<chunk(N)>::give(p);
      return true;
    }
  }
};

/// std::make_shared, its object and counts in a chunk of the calling thread's pool.
template <class T, class... Args>
std::shared_ptr<T> make_pooled(Args&&... args) {
  return std::allocate_shared<T>(PooledAllocator<T>{}, std::forward<Args>(args)...);
}

}  // namespace glassbox::autograd::detail
