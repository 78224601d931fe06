#pragma once
// glassbox's NVTX domain ("glassbox"), its categories (one per part) and
// registered names. Registered names are handed to the tool once, so a range
// costs a pointer, not a string copy. Without NVTX headers at build time, or
// without a tool attached at run time, every call is a cheap no-op.
#include <cstdint>

namespace glassbox::nvtx {

/// One category per part, named in the domain so Nsight can filter by it.
enum class Category : std::uint32_t {
  handle_pool = 1,
  host_allocator = 2,
  cudnn = 3,
  autograd = 4,
  exporter = 5,
};

/// Whether glassbox was built with the NVTX3 headers.
bool compiled_in() noexcept;

/// The domain handle (nvtxDomainHandle_t) as an opaque pointer.
void* domain() noexcept;

/// A fixed name registered once with the domain. Construct these as statics.
class RegisteredName {
 public:
  explicit RegisteredName(const char* text) noexcept;
  const char* text() const noexcept { return text_; }
  void* handle() const noexcept { return handle_; }

 private:
  const char* text_;
  void* handle_;
};

}  // namespace glassbox::nvtx
