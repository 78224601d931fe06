#pragma once
// Library workspaces per (handle, stream): cuBLAS wants a workspace of its
// own for each stream a handle runs on, made on first use (32 MiB each by
// default) and, until release_idle(), kept for good. The table counts them in
// glassbox_handle_workspace_bytes{library,device} and frees the idle ones on
// request, while other threads bind handles.
//
// A workspace is in use while its handle is lent to a thread and bound to its
// stream: bind() records that in the same critical section that hands the
// workspace out, so release_idle() (which holds that lock throughout) never
// frees a workspace between a thread getting it and binding it. It frees a
// workspace whose handle has since been bound to another stream (the library
// no longer points at it) or is back in the pool (its next thread binds it
// again, to a fresh one). The `free` given must wait for work queued on the
// workspace (cudaFree synchronizes the device).
//
// Handles and streams are opaque pointers (cublasHandle_t, cudaStream_t), so
// the table has no CUDA in it and tests run it on fakes.
#include <cstddef>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "glassbox/metrics/registry.hpp"

namespace glassbox::handle_pool {

class WorkspaceTable {
 public:
  using Handle = const void*;
  using Stream = const void*;
  struct Memory {
    std::function<void*(int device, std::size_t bytes)> allocate;  ///< throws on failure
    std::function<void(int device, void* ptr)> free;               ///< noexcept in spirit: a failure is lost
  };
  /// Whether `handle` of `device` waits in its pool, lent to no thread.
  using Idle = std::function<bool(int device, Handle handle)>;

  /// `bytes` per workspace; `library` labels the gauge.
  WorkspaceTable(std::string library, std::size_t bytes, Memory memory,
                 metrics::Registry& registry = metrics::Registry::global());
  /// Frees every workspace: destroy it once no handle runs on them.
  ~WorkspaceTable();
  WorkspaceTable(const WorkspaceTable&) = delete;
  WorkspaceTable& operator=(const WorkspaceTable&) = delete;

  /// The workspace of `handle` on `stream`, made on first use; from now on the
  /// handle counts as bound to `stream`. Call from the thread the handle is lent to.
  void* bind(Handle handle, Stream stream, int device);

  /// Frees every idle workspace (see above); returns the bytes freed.
  /// Thread-safe against bind() and itself.
  std::size_t release_idle(const Idle& handle_idle);

  /// Bytes of workspace held now on `device`.
  std::size_t bytes(int device) const;
  std::size_t workspace_bytes() const noexcept { return bytes_; }

 private:
  struct Space {
    int device;
    void* ptr;
  };
  metrics::Gauge& gauge(int device);  // caller holds mu_

  const std::string library_;
  const std::size_t bytes_;
  const Memory memory_;
  metrics::Registry& registry_;
  mutable std::mutex mu_;
  std::map<std::pair<Handle, Stream>, Space> spaces_;
  std::map<Handle, Stream> bound_;
  std::map<int, metrics::Gauge> gauges_;
  std::map<int, std::size_t> held_;
};

}  // namespace glassbox::handle_pool
