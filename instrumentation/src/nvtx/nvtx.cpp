// NVTX3 calls behind glassbox's wrapper; no-ops when built without NVTX.
#include "glassbox/nvtx/domain.hpp"
#include "glassbox/nvtx/range.hpp"

#include <iterator>

#if GLASSBOX_HAVE_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

namespace glassbox::nvtx {

#if GLASSBOX_HAVE_NVTX

namespace {

struct CategoryInfo {
  Category id;
  const char* name;
  std::uint32_t argb;
};

constexpr CategoryInfo kCategories[] = {
    {Category::handle_pool, "handle_pool", 0xff4c9be8},
    {Category::host_allocator, "host_allocator", 0xff5cb85c},
    {Category::cudnn, "cudnn", 0xfff0ad4e},
    {Category::autograd, "autograd", 0xffd9534f},
    {Category::exporter, "exporter", 0xff9b59b6},
};

// attributes() indexes this table by category id - 1.
constexpr bool categories_in_order() {
  for (std::size_t i = 0; i < std::size(kCategories); ++i) {
    if (static_cast<std::size_t>(kCategories[i].id) != i + 1) return false;
  }
  return true;
}
static_assert(categories_in_order(), "kCategories must list Category values 1, 2, 3, ... in order");

nvtxDomainHandle_t the_domain() noexcept {
  static nvtxDomainHandle_t d = [] {
    nvtxDomainHandle_t h = nvtxDomainCreateA("glassbox");
    for (const auto& c : kCategories) nvtxDomainNameCategoryA(h, static_cast<std::uint32_t>(c.id), c.name);
    return h;
  }();
  return d;
}

nvtxEventAttributes_t attributes(Category category) noexcept {
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.category = static_cast<std::uint32_t>(category);
  a.colorType = NVTX_COLOR_ARGB;
  a.color = kCategories[static_cast<std::size_t>(category) - 1].argb;
  return a;
}

nvtxEventAttributes_t attributes(const RegisteredName& name, Category category) noexcept {
  nvtxEventAttributes_t a = attributes(category);
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = static_cast<nvtxStringHandle_t>(name.handle());
  return a;
}

}  // namespace

bool compiled_in() noexcept { return true; }
void* domain() noexcept { return the_domain(); }

RegisteredName::RegisteredName(const char* text) noexcept
    : text_(text), handle_(nvtxDomainRegisterStringA(the_domain(), text)) {}

ScopedRange::ScopedRange(const RegisteredName& name, Category category) noexcept {
  nvtxEventAttributes_t a = attributes(name, category);
  nvtxDomainRangePushEx(the_domain(), &a);
}

ScopedRange::ScopedRange(const char* name, Category category) noexcept {
  nvtxEventAttributes_t a = attributes(category);
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = name;
  nvtxDomainRangePushEx(the_domain(), &a);
}

ScopedRange::~ScopedRange() { nvtxDomainRangePop(the_domain()); }

RangeId start_range(const RegisteredName& name, Category category) noexcept {
  nvtxEventAttributes_t a = attributes(name, category);
  return nvtxDomainRangeStartEx(the_domain(), &a);
}

void end_range(RangeId id) noexcept { nvtxDomainRangeEnd(the_domain(), id); }

#else  // no NVTX headers: same API, nothing recorded

bool compiled_in() noexcept { return false; }
void* domain() noexcept { return nullptr; }
RegisteredName::RegisteredName(const char* text) noexcept : text_(text), handle_(nullptr) {}
ScopedRange::ScopedRange(const RegisteredName&, Category) noexcept {}
ScopedRange::ScopedRange(const char*, Category) noexcept {}
ScopedRange::~ScopedRange() = default;
RangeId start_range(const RegisteredName&, Category) noexcept { return 0; }
void end_range(RangeId) noexcept {}

#endif

}  // namespace glassbox::nvtx
