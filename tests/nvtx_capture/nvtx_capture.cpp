// An NVTX injection library that records the domain (CORE2) calls of the
// process it is injected into, so tests can check what glassbox tells NVTX
// without Nsight. Only the types come from the NVTX headers: the NVTX
// implementation lives in the instrumented program and calls into us.
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtCounters.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "nvtx_capture.h"

namespace {

struct Event {
  glassbox_nvtx_event_kind kind;
  std::string domain;
  std::string message;
  std::uint32_t category = 0;
  std::uint64_t thread_id = 0;
  std::uint64_t range_id = 0;
  std::uint64_t counter_id = 0;
  std::int64_t value = 0;
};

struct Range {
  std::uint64_t id = 0;
  std::string message;
  std::uint32_t category = 0;
};

// Owns what NVTX handles point at. A deque never moves its elements, so a
// handle stays valid however many follow; the index rejects foreign handles.
template <class T>
class HandleTable {
 public:
  void* add(T item) {
    T* p = &items_.emplace_back(std::move(item));
    index_.emplace(p, p);
    return p;
  }
  // One name, one domain: creating a name again gives back the first handle.
  void* add_unique(T item) {
    auto it = std::find(items_.begin(), items_.end(), item);
    return it != items_.end() ? &*it : add(std::move(item));
  }
  const T* find(const void* handle) const {
    auto it = index_.find(handle);
    return it == index_.end() ? nullptr : it->second;
  }

 private:
  std::deque<T> items_;
  std::unordered_map<const void*, const T*> index_;
};

struct State {
  std::mutex mu;
  HandleTable<std::string> domains;
  HandleTable<std::string> strings;
  std::unordered_map<std::uint64_t, Range> started;
  std::vector<std::string> counters;  // by id - 1
  std::vector<Event> events;
};

// Leaked on purpose: NVTX calls made by static destructors at exit must still
// find it.
State& state() {
  static State* s = new State;
  return *s;
}

// Ids for start/end and for push/pop pairing; 0 means "no range".
std::uint64_t next_range_id() {
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

// NVTX pushes and pops nest per thread and per domain.
std::vector<Range>& pushed(nvtxDomainHandle_t domain) {
  thread_local std::unordered_map<nvtxDomainHandle_t, std::vector<Range>> stacks;
  return stacks[domain];
}

std::uint64_t os_thread_id() { return static_cast<std::uint64_t>(::syscall(SYS_gettid)); }

std::string text_of(const char* text) { return text ? text : ""; }

// From here on, helpers taking State expect the caller to hold s.mu.
std::string domain_name(const State& s, nvtxDomainHandle_t domain) {
  if (domain == nullptr) return "";
  const std::string* name = s.domains.find(domain);
  return name ? *name : GLASSBOX_NVTX_UNKNOWN_TEXT;
}

std::string message_text(const State& s, const nvtxEventAttributes_t* a) {
  if (a == nullptr || a->messageType == NVTX_MESSAGE_UNKNOWN) return "";
  if (a->messageType == NVTX_MESSAGE_TYPE_ASCII && a->message.ascii != nullptr) return a->message.ascii;
  if (a->messageType == NVTX_MESSAGE_TYPE_REGISTERED) {
    const std::string* text = s.strings.find(a->message.registered);
    if (text != nullptr) return *text;
  }
  return GLASSBOX_NVTX_UNKNOWN_TEXT;
}

Range described(const State& s, const nvtxEventAttributes_t* a, std::uint64_t id) {
  return Range{id, message_text(s, a), a ? a->category : 0};
}

void record(State& s, glassbox_nvtx_event_kind kind, nvtxDomainHandle_t domain, const Range& r) {
  s.events.push_back(Event{kind, domain_name(s, domain), r.message, r.category, os_thread_id(), r.id});
}

void record_registration(State& s, glassbox_nvtx_event_kind kind, nvtxDomainHandle_t domain, const char* text,
                         std::uint32_t category = 0) {
  record(s, kind, domain, Range{0, text_of(text), category});
}

// ---- NVTX callbacks: noexcept, since they are called from C ----

nvtxDomainHandle_t domain_create(const char* name) noexcept {
  State& s = state();
  std::lock_guard lock(s.mu);
  auto domain = static_cast<nvtxDomainHandle_t>(s.domains.add_unique(text_of(name)));
  record_registration(s, GLASSBOX_NVTX_DOMAIN_CREATE, domain, name);
  return domain;
}

nvtxStringHandle_t register_string(nvtxDomainHandle_t domain, const char* text) noexcept {
  State& s = state();
  std::lock_guard lock(s.mu);
  auto handle = static_cast<nvtxStringHandle_t>(s.strings.add(text_of(text)));
  record_registration(s, GLASSBOX_NVTX_REGISTER_STRING, domain, text);
  return handle;
}

void name_category(nvtxDomainHandle_t domain, std::uint32_t category, const char* name) noexcept {
  State& s = state();
  std::lock_guard lock(s.mu);
  record_registration(s, GLASSBOX_NVTX_NAME_CATEGORY, domain, name, category);
}

int range_push(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* a) noexcept {
  State& s = state();
  std::lock_guard lock(s.mu);
  std::vector<Range>& stack = pushed(domain);
  stack.push_back(described(s, a, next_range_id()));
  record(s, GLASSBOX_NVTX_PUSH, domain, stack.back());
  return static_cast<int>(stack.size()) - 1;  // the new range's depth
}

int range_pop(nvtxDomainHandle_t domain) noexcept {
  State& s = state();
  std::lock_guard lock(s.mu);
  std::vector<Range>& stack = pushed(domain);
  if (stack.empty()) {
    record(s, GLASSBOX_NVTX_POP, domain, Range{});
    return -1;  // NVTX's error value for a pop with nothing pushed
  }
  record(s, GLASSBOX_NVTX_POP, domain, stack.back());
  stack.pop_back();
  return static_cast<int>(stack.size());  // the closed range's depth
}

nvtxRangeId_t range_start(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* a) noexcept {
  State& s = state();
  std::lock_guard lock(s.mu);
  Range r = described(s, a, next_range_id());
  record(s, GLASSBOX_NVTX_START, domain, r);
  s.started.emplace(r.id, r);
  return r.id;
}

void range_end(nvtxDomainHandle_t domain, nvtxRangeId_t id) noexcept {
  State& s = state();
  std::lock_guard lock(s.mu);
  Range r{id, "", 0};
  if (auto it = s.started.find(id); it != s.started.end()) {
    r = std::move(it->second);
    s.started.erase(it);
  }
  record(s, GLASSBOX_NVTX_END, domain, r);
}

void mark(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* a) noexcept {
  State& s = state();
  std::lock_guard lock(s.mu);
  record(s, GLASSBOX_NVTX_MARK, domain, described(s, a, 0));
}

// ---- the counters extension ----

std::uint64_t counter_register(nvtxDomainHandle_t domain, const nvtxCounterAttr_t* attr) noexcept {
  State& s = state();
  std::lock_guard lock(s.mu);
  if (attr == nullptr) return NVTX_COUNTER_ID_NONE;
  s.counters.push_back(text_of(attr->name));
  const std::uint64_t id = s.counters.size();
  record_registration(s, GLASSBOX_NVTX_COUNTER_REGISTER, domain, attr->name);
  s.events.back().counter_id = id;
  return id;
}

void counter_sample_int64(nvtxDomainHandle_t domain, std::uint64_t id, std::int64_t value) noexcept {
  State& s = state();
  std::lock_guard lock(s.mu);
  const bool known = id >= 1 && id <= s.counters.size();
  record(s, GLASSBOX_NVTX_COUNTER_SAMPLE, domain, Range{0, known ? s.counters[id - 1] : GLASSBOX_NVTX_UNKNOWN_TEXT, 0});
  s.events.back().counter_id = id;
  s.events.back().value = value;
}

// ---- attaching ----

// Fn names the NVTX slot's exact type, so a callback with the wrong signature
// fails to compile instead of corrupting the stack at run time.
template <class Fn>
bool install(NvtxFunctionTable table, unsigned size, NvtxCallbackIdCore2 id, Fn fn) {
  if (static_cast<unsigned>(id) >= size || table[id] == nullptr) return false;
  *table[id] = reinterpret_cast<NvtxFunctionPointer>(fn);
  return true;
}

bool install_core2(const NvtxExportTableCallbacks& callbacks) {
  NvtxFunctionTable t = nullptr;
  unsigned n = 0;
  if (callbacks.GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &t, &n) == 0 || t == nullptr) return false;
  return install<nvtxDomainCreateA_impl_fntype>(t, n, NVTX_CBID_CORE2_DomainCreateA, domain_create) &&
         install<nvtxDomainRegisterStringA_impl_fntype>(t, n, NVTX_CBID_CORE2_DomainRegisterStringA, register_string) &&
         install<nvtxDomainNameCategoryA_impl_fntype>(t, n, NVTX_CBID_CORE2_DomainNameCategoryA, name_category) &&
         install<nvtxDomainRangePushEx_impl_fntype>(t, n, NVTX_CBID_CORE2_DomainRangePushEx, range_push) &&
         install<nvtxDomainRangePop_impl_fntype>(t, n, NVTX_CBID_CORE2_DomainRangePop, range_pop) &&
         install<nvtxDomainRangeStartEx_impl_fntype>(t, n, NVTX_CBID_CORE2_DomainRangeStartEx, range_start) &&
         install<nvtxDomainRangeEnd_impl_fntype>(t, n, NVTX_CBID_CORE2_DomainRangeEnd, range_end) &&
         install<nvtxDomainMarkEx_impl_fntype>(t, n, NVTX_CBID_CORE2_DomainMarkEx, mark);
}

void copy_text(char (&out)[GLASSBOX_NVTX_TEXT_MAX], const std::string& text) {
  std::size_t n = std::min(text.size(), sizeof(out) - 1);
  std::memcpy(out, text.data(), n);
  out[n] = '\0';
}

bool is_range_or_mark(const Event& e) {
  return e.kind != GLASSBOX_NVTX_DOMAIN_CREATE && e.kind != GLASSBOX_NVTX_REGISTER_STRING &&
         e.kind != GLASSBOX_NVTX_NAME_CATEGORY && e.kind != GLASSBOX_NVTX_COUNTER_REGISTER;
}

}  // namespace

extern "C" {

// NVTX's entry point; returning 0 tells NVTX to unload us and go quiet.
int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table) {
  if (get_export_table == nullptr) return 0;
  auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  if (callbacks == nullptr || callbacks->struct_size < sizeof(NvtxExportTableCallbacks)) return 0;
  if (!install_core2(*callbacks)) return 0;
  auto* version = static_cast<const NvtxExportTableVersionInfo*>(get_export_table(NVTX_ETID_VERSIONINFO));
  if (version != nullptr && version->struct_size >= sizeof(NvtxExportTableVersionInfo)) {
    version->SetInjectionNvtxVersion(NVTX_VERSION);  // NVTX asks tools to say which version they speak
  }
  return 1;
}

// NVTX's entry point for extensions, once per module: takes the counters
// extension's register and int64 sample; leaves the other modules (and the
// counters' other calls) as no-ops. Exported by name: the header declares the
// module's types with internal visibility, which a function taking them would
// inherit.
__attribute__((visibility("default"))) int InitializeInjectionNvtxExtension(nvtxExtModuleInfo_t* info) {
  if (info == nullptr || info->moduleId != NVTX_EXT_COUNTERS_MODULEID) return 1;
  if (info->segmentsCount < 1 || info->segments == nullptr) return 0;
  nvtxExtModuleSegment_t& seg = info->segments[0];
  if (seg.slotCount <= NVTX3EXT_CBID_nvtxCounterSampleInt64) return 0;
  seg.functionSlots[NVTX3EXT_CBID_nvtxCounterRegister] = reinterpret_cast<intptr_t>(&counter_register);
  seg.functionSlots[NVTX3EXT_CBID_nvtxCounterSampleInt64] = reinterpret_cast<intptr_t>(&counter_sample_int64);
  return 1;
}

size_t glassbox_nvtx_capture_count(void) {
  State& s = state();
  std::lock_guard lock(s.mu);
  return s.events.size();
}

int glassbox_nvtx_capture_get(size_t i, struct glassbox_nvtx_event* out) {
  State& s = state();
  std::lock_guard lock(s.mu);
  if (out == nullptr || i >= s.events.size()) return 0;
  const Event& e = s.events[i];
  out->kind = e.kind;
  copy_text(out->domain, e.domain);
  copy_text(out->message, e.message);
  out->category = e.category;
  out->thread_id = e.thread_id;
  out->range_id = e.range_id;
  out->counter_id = e.counter_id;
  out->value = e.value;
  return 1;
}

void glassbox_nvtx_capture_clear(void) {
  State& s = state();
  std::lock_guard lock(s.mu);
  std::erase_if(s.events, is_range_or_mark);
}

}  // extern "C"
