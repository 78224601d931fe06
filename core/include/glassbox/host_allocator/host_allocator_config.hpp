#pragma once
// Settings of the caching host allocator, from GLASSBOX_HOST_ALLOC_CONF: a
// comma list of key:value, as PYTORCH_CUDA_ALLOC_CONF. For example
//   GLASSBOX_HOST_ALLOC_CONF=background_thread:true,size_classes:pow2x4,max_cached_bytes:8GiB
#include <cstddef>
#include <string>
#include <string_view>

#include "glassbox/host_allocator/size_classes.hpp"

namespace glassbox::host_allocator {

struct HostAllocatorConfig {
  /// Process pending events on a background thread instead of in allocate().
  bool background_thread = false;
  /// Tell the backend each hand-out's requested bytes (mark_requested): on
  /// CUDA an NVTX memory region per block, so compute-sanitizer's memcheck
  /// flags reads into the rounding slack past the request. Off by default:
  /// it costs two NVTX calls and a lock per allocate. Next to
  /// background_thread, which allocate() reads too: one cache line for both.
  bool nvtx_mem_regions = false;
  SizeClassPolicy size_classes = SizeClassPolicy::pow2;
  /// CUDA backend: malloc + cudaHostRegister instead of cudaHostAlloc, with
  /// the pages first touched by `register_threads` threads (large blocks).
  bool use_host_register = false;
  int register_threads = 1;
  /// Cap on cached bytes, shared free lists and thread caches together;
  /// above it the least recently freed blocks go back to the system. The
  /// trim runs in allocate() before it makes a new block, in
  /// process_events() and on the background thread, with no allocator lock
  /// held while memory is returned (cudaFreeHost waits for the device);
  /// never inside free(), so frees may take the cache over the cap until one
  /// of those runs. Private pools' free blocks do not count: they leave with
  /// release_pool(). 0: no cap.
  std::size_t max_cached_bytes = 0;
  /// Free blocks each thread keeps per size class (0..8) so that a thread
  /// re-using a size takes no shared lock; blocks up to 1 MiB only. 0
  /// disables the thread caches. Also the size of a group of deferred
  /// blocks (record_stream with StreamLife::outlives_allocator), which one
  /// event covers: 8, as four left the record path at one thread bound by
  /// its driver calls (H100: 395-400 ns a call against 307-308 with 8).
  int thread_cache = 8;
  /// A free on a stream the allocator cannot defer on first asks the backend
  /// whether the stream has run everything queued on it (a stream query):
  /// then the block is free to reuse at once, with no event to record and
  /// poll. A stream found busy is not asked again for up to 63 of the
  /// thread's frees on it (1, 3, 7, ... while it stays busy), so a caller
  /// that always frees right behind its copies pays about one query in 64.
  bool idle_stream_check = true;
  /// Where an out-of-memory writes a JSON snapshot of every block (format:
  /// docs in caching_host_allocator.hpp, OutOfMemoryInfo). Empty: none.
  /// Rewritten at each out-of-memory, so it holds the latest.
  std::string oom_snapshot;

  /// Parses `text`; a bad key or value throws ConfigError naming `source`,
  /// the key, the value and what is accepted.
  static HostAllocatorConfig parse(std::string_view text, std::string_view source = "GLASSBOX_HOST_ALLOC_CONF");
  /// GLASSBOX_HOST_ALLOC_CONF, or the defaults when unset.
  static HostAllocatorConfig from_env();
  std::string to_string() const;
};

}  // namespace glassbox::host_allocator
