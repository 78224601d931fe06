// Span ids, the current context, samplers, the global processor and Span.
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <utility>
#include <vector>

#include "glassbox/error.hpp"
#include "glassbox/trace/context.hpp"
#include "glassbox/trace/span.hpp"
#include "glassbox/trace/span_processor.hpp"

namespace glassbox::trace {

namespace detail {
std::atomic<bool> tracing_on{false};
constinit thread_local SpanContext current;
}  // namespace detail

namespace {

// splitmix64 seeded per thread from the OS: ids need to be unique, not secret.
std::uint64_t seed() {
  std::random_device rd;
  return (std::uint64_t{rd()} << 32) ^ rd() ^
         static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^ 1;
}

constexpr std::uint64_t mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Constant-initialised, so reading it needs no per-access TLS init check.
thread_local std::uint64_t rng_state = 0;

// N random words, each non-zero so that no id is all zero (invalid); the 2^-64
// bias that adds does not matter. One read and one write of the thread's
// state for all N, and the words stay in registers.
template <std::size_t N>
std::array<std::uint64_t, N> nonzero_randoms() {
  std::uint64_t s = rng_state;
  if (s == 0) [[unlikely]]
    s = seed();
  auto next = [&s] {
    std::uint64_t w;
    do w = mix(s += 0x9e3779b97f4a7c15ULL);
    while (w == 0);
    return w;
  };
  // Unrolled (a braced list runs left to right), so no word goes through memory.
  auto out = [&]<std::size_t... I>(std::index_sequence<I...>) {
    return std::array<std::uint64_t, N>{((void)I, next())...};
  }
  (std::make_index_sequence<N>{});
  rng_state = s;
  return out;
}

template <std::size_t N>
void fill_random_nonzero(std::array<std::uint8_t, N>& bytes) {
  auto w = nonzero_randoms<N / 8>();
  std::memcpy(bytes.data(), w.data(), N);
}

template <std::size_t N>
std::string to_hex(const std::array<std::uint8_t, N>& bytes) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out(2 * N, '0');
  for (std::size_t i = 0; i < N; ++i) {
    out[2 * i] = digits[bytes[i] >> 4];
    out[2 * i + 1] = digits[bytes[i] & 0xf];
  }
  return out;
}

using detail::current;

// Contexts are only ever written and copied as two aligned 16-byte halves, so
// every load of one has the shape of the store that wrote it. A load that
// spans several narrower stores still in the store buffer cannot be forwarded
// and stalls; member-wise writes and copies (an assignment copies 26 bytes as
// two overlapping moves) cost a dropped span about 15 ns that way.
using Half = std::uint64_t __attribute__((vector_size(16)));
static_assert(sizeof(SpanContext) == 2 * sizeof(Half) && offsetof(SpanContext, span_id) == 16 &&
              offsetof(SpanContext, sampled) == 24 && offsetof(SpanContext, remote) == 25);

void put(SpanContext& to, const SpanContext& from) noexcept { std::memcpy(&to, &from, sizeof to); }

// The 8-byte words of an id, read before the id's own copy is needed elsewhere.
template <std::size_t N>
std::array<std::uint64_t, N / 8> words(const std::array<std::uint8_t, N>& bytes) noexcept {
  std::array<std::uint64_t, N / 8> w;
  std::memcpy(w.data(), bytes.data(), N);
  return w;
}

// Builds both halves in registers: trace id; span id, sampled, remote = false.
void store_context(SpanContext& to, std::array<std::uint64_t, 2> trace, std::uint64_t span, bool sampled) noexcept {
  std::uint64_t flags = 0;
  std::memcpy(&flags, &sampled, sizeof sampled);
  const Half halves[2] = {{trace[0], trace[1]}, {span, flags}};
  std::memcpy(&to, halves, sizeof halves);
}

std::uint64_t unix_now_ns() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
}

std::uint64_t os_thread_id() {
  thread_local std::uint64_t tid = 0;  // constant-initialised, like next_random's state
  if (tid == 0) [[unlikely]]
    tid = static_cast<std::uint64_t>(::syscall(SYS_gettid));
  return tid;
}

struct Globals {
  std::atomic<std::shared_ptr<SpanProcessor>> processor;
  std::atomic<std::shared_ptr<Sampler>> sampler;
  std::mutex kept_mu;
  std::vector<std::shared_ptr<Sampler>> kept;  // every sampler ever installed, see g_sampler_now
};

// Span::start reads the sampler through this plain, constant-initialised
// pointer: loading the shared_ptr costs four atomic read-modify-writes, more
// than a dropped span's whole budget. So that a span may still use a sampler
// just replaced, every sampler ever installed is kept alive (Globals::kept);
// they are small and set at start-up.
std::atomic<const Sampler*> g_sampler_now{nullptr};

Globals& globals() {
  static Globals* g = new Globals;  // leaked: spans may end during static destruction
  return *g;
}

}  // namespace

std::string TraceId::hex() const { return to_hex(bytes); }
TraceId TraceId::random() {
  TraceId id;
  fill_random_nonzero(id.bytes);
  return id;
}

std::string SpanId::hex() const { return to_hex(bytes); }
SpanId SpanId::random() {
  SpanId id;
  fill_random_nonzero(id.bytes);
  return id;
}

SpanContext current_context() noexcept { return current; }

ContextScope::ContextScope(const SpanContext& context) noexcept : previous_(current) { put(current, context); }
ContextScope::~ContextScope() { put(current, previous_); }

void set_span_processor(std::shared_ptr<SpanProcessor> processor) {
  if (processor && !globals().sampler.load()) set_sampler(sampler_from_env());
  bool on = processor != nullptr;
  globals().processor.store(std::move(processor));
  detail::tracing_on.store(on, std::memory_order_relaxed);
}

std::shared_ptr<SpanProcessor> span_processor() { return globals().processor.load(); }
void set_sampler(std::shared_ptr<Sampler> s) {
  Globals& g = globals();
  {
    std::lock_guard lock(g.kept_mu);
    if (s) g.kept.push_back(s);
  }
  g_sampler_now.store(s.get(), std::memory_order_release);
  g.sampler.store(std::move(s));
}
std::shared_ptr<Sampler> sampler() { return globals().sampler.load(); }
bool tracing_enabled() noexcept { return detail::tracing_on.load(std::memory_order_relaxed); }

void Span::start(std::string_view name, SpanKind kind) {
  const SpanContext parent = current;
  const bool has_parent = parent.valid();
  // Ids stay in registers until stored whole (see store_context).
  std::array<std::uint64_t, 2> trace;
  std::uint64_t span;
  if (has_parent) {
    trace = words(parent.trace_id.bytes);
    span = nonzero_randoms<1>()[0];
  } else {
    auto r = nonzero_randoms<3>();
    trace = {r[0], r[1]};
    span = r[2];
  }
  store_context(context_, trace, span, true);
  const Sampler* s = g_sampler_now.load(std::memory_order_acquire);
  if (s && !s->should_sample(parent, context_.trace_id, name)) store_context(context_, trace, span, false);
  if (context_.sampled) {
    data_.emplace();
    data_->name = name;
    data_->context = context_;
    if (has_parent) data_->parent_span_id = parent.span_id;
    data_->kind = kind;
    data_->thread_id = os_thread_id();
    data_->start_unix_ns = unix_now_ns();
  }
  put(previous_, parent);
  put(current, context_);
  active_ = true;
}

Span& Span::set_attribute(std::string_view key, AttributeValue value) {
  if (!data_) return *this;
  // Spans carry a few attributes: one allocation for the first four, not one per growth.
  if (data_->attributes.capacity() == 0) data_->attributes.reserve(4);
  data_->attributes.push_back({std::string(key), std::move(value)});
  return *this;
}

void Span::set_status(StatusCode code, std::string_view message) {
  if (!data_) return;
  data_->status = code;
  data_->status_message = code == StatusCode::error ? std::string(message) : std::string();
}

Span& Span::add_event(std::string_view name, std::vector<Attribute> attributes) {
  if (data_) data_->events.push_back({std::string(name), unix_now_ns(), std::move(attributes)});
  return *this;
}

void Span::finish() noexcept {
  data_->end_unix_ns = unix_now_ns();
  if (auto p = globals().processor.load()) p->on_end(std::move(*data_));
  data_.reset();
}

}  // namespace glassbox::trace
