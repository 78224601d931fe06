// NVTX counters behind glassbox's wrapper; no-ops without the extension.
#include "glassbox/nvtx/counter.hpp"

#include "glassbox/nvtx/domain.hpp"

#if GLASSBOX_HAVE_NVTX_COUNTERS
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtCounters.h>
#endif

namespace glassbox::nvtx {

#if GLASSBOX_HAVE_NVTX_COUNTERS

bool counters_compiled_in() noexcept { return true; }

std::uint64_t register_counter(const char* name) noexcept {
  nvtxCounterAttr_t attr{};
  attr.structSize = sizeof attr;
  attr.schemaId = NVTX_PAYLOAD_ENTRY_TYPE_INT64;  // a predefined type stands for a one-value schema
  attr.name = name;
  attr.scopeId = NVTX_SCOPE_NONE;
  attr.counterId = NVTX_COUNTER_ID_NONE;  // the tool picks the id
  return nvtxCounterRegister(static_cast<nvtxDomainHandle_t>(domain()), &attr);
}

void sample_counter(std::uint64_t id, std::int64_t value) noexcept {
  nvtxCounterSampleInt64(static_cast<nvtxDomainHandle_t>(domain()), id, value);
}

#else

bool counters_compiled_in() noexcept { return false; }
std::uint64_t register_counter(const char*) noexcept { return 0; }
void sample_counter(std::uint64_t, std::int64_t) noexcept {}

#endif

}  // namespace glassbox::nvtx
