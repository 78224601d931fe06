#pragma once
// What the caching host allocator needs from a device runtime: pinned host
// memory, events recorded on streams, and stream capture state. Called only
// off the cached pair's path (a new block, a record without a promise, a free
// with recorded streams, a stream query, event polling), beside driver calls or locks that
// cost far more than a virtual call; mark_requested, on every
// hand-out, only when the config asks for it (nvtx_mem_regions).
#include <cstddef>
#include <cstdint>
#include <string>

namespace glassbox::host_allocator {

/// Opaque stream and event identities: a cudaStream_t / cudaEvent_t, or a
/// sim backend object, as an integer.
using StreamId = std::uintptr_t;
using EventId = std::uintptr_t;

/// What a caller of record_stream() knows of a stream's life.
enum class StreamLife : std::uint8_t {
  unknown,  ///< it may be destroyed right after free()
  /// Never destroyed while the allocator lives, and its handle names the
  /// same stream on every thread (not the per-thread default stream, nor
  /// stream 0 with several devices): an event may be recorded on it later,
  /// from another thread (a stream of a pool that is never emptied, as
  /// PyTorch's, or a service's own long-lived streams).
  outlives_allocator,
};

/// What a poll of an event found. `failed` is final: the event will never
/// report complete (in CUDA: it was recorded inside a graph capture, or the
/// context is lost); `error` then names the failure, as static text.
struct EventPoll {
  enum Status : std::uint8_t { pending, complete, failed };
  Status status = pending;
  const char* error = nullptr;
};

class HostBackend {
 public:
  virtual ~HostBackend() = default;
  /// Page-locked memory of `bytes`, or nullptr when the system is out of it.
  /// Other failures throw glassbox::BackendError.
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void deallocate(void* ptr, std::size_t bytes) noexcept = 0;
  /// An event recorded on `stream` (from a reusable pool). On a capturing
  /// stream the record is captured, as CUDA does, and every poll of the
  /// event fails: callers check is_capturing() first.
  virtual EventId record_event(StreamId stream) = 0;
  /// Polls the event: complete once everything before it on its stream has run.
  virtual EventPoll query_event(EventId event) noexcept = 0;
  /// Gives the event back to the pool (a failed one too: a new record resets it).
  virtual void release_event(EventId event) noexcept = 0;
  /// Whether everything queued on `stream` so far has run (CUDA: a stream
  /// query), so that a block whose use on it ended before this call is free
  /// to reuse with no event. False where the stream has work left, the
  /// backend cannot tell, or the query fails (the event path then reports
  /// the failure). Not asked of a stream found capturing just before.
  virtual bool stream_done(StreamId /*stream*/) noexcept { return false; }
  /// The calling thread's current stream.
  virtual StreamId current_stream() const = 0;
  virtual bool is_capturing(StreamId stream) const = 0;
  /// Whether the backend knows that `stream` meets StreamLife::outlives_allocator
  /// (a stream of its own pool, never destroyed): record_stream() then defers
  /// as if the caller had promised it. Asked at a record without a promise;
  /// a thread remembers the answer for its last stream, so a yes must hold
  /// for the allocator's life (a no may turn into a yes: then it only
  /// defers less).
  virtual bool stream_outlives_allocator(StreamId /*stream*/) const noexcept { return false; }
  /// A number no other stream of the process had, asked at each record: two
  /// events of one thread on one stream share a poll (the later completing
  /// says the earlier did), and a stream's handle may be reused once it is
  /// destroyed, for a stream whose work is in no order with the old one's.
  /// 0: the backend cannot tell (events then share no poll).
  virtual std::uint64_t stream_serial(StreamId /*stream*/) const noexcept { return 0; }
  virtual std::string name() const = 0;
  /// The block at `ptr` (of `block_bytes`) is handed out for `requested`
  /// bytes: a backend may tell a tool where the request ends (CUDA: an NVTX
  /// memory region, for compute-sanitizer). Called only with
  /// nvtx_mem_regions:true in the config.
  virtual void mark_requested(void* /*ptr*/, std::size_t /*requested*/, std::size_t /*block_bytes*/) noexcept {}
};

}  // namespace glassbox::host_allocator
