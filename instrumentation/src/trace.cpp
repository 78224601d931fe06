// Span ids, the current context, samplers, the global processor and Span.
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <random>

#include "glassbox/error.hpp"
#include "glassbox/trace/context.hpp"
#include "glassbox/trace/span.hpp"
#include "glassbox/trace/span_processor.hpp"

namespace glassbox::trace {

namespace detail {
std::atomic<bool> tracing_on{false};
}

namespace {

// splitmix64 seeded per thread from the OS: ids need to be unique, not secret.
std::uint64_t next_random() {
  thread_local std::uint64_t state = [] {
    std::random_device rd;
    return (std::uint64_t{rd()} << 32) ^ rd() ^
           static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  }();
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

template <std::size_t N>
void fill_random_nonzero(std::array<std::uint8_t, N>& bytes) {
  do {
    for (std::size_t i = 0; i < N; i += 8) {
      std::uint64_t r = next_random();
      for (std::size_t j = 0; j < 8 && i + j < N; ++j) bytes[i + j] = static_cast<std::uint8_t>(r >> (8 * j));
    }
  } while (std::all_of(bytes.begin(), bytes.end(), [](auto b) { return b == 0; }));
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

thread_local SpanContext tl_current;

std::uint64_t unix_now_ns() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::system_clock::now().time_since_epoch())
                                        .count());
}

std::uint64_t os_thread_id() {
  thread_local std::uint64_t tid = static_cast<std::uint64_t>(::syscall(SYS_gettid));
  return tid;
}

struct Globals {
  std::atomic<std::shared_ptr<SpanProcessor>> processor;
  std::atomic<std::shared_ptr<Sampler>> sampler;
};

Globals& globals() {
  static Globals* g = new Globals;  // leaked: spans may end during static destruction
  return *g;
}

}  // namespace

bool TraceId::valid() const noexcept {
  return std::any_of(bytes.begin(), bytes.end(), [](auto b) { return b != 0; });
}
std::string TraceId::hex() const { return to_hex(bytes); }
TraceId TraceId::random() {
  TraceId id;
  fill_random_nonzero(id.bytes);
  return id;
}

bool SpanId::valid() const noexcept {
  return std::any_of(bytes.begin(), bytes.end(), [](auto b) { return b != 0; });
}
std::string SpanId::hex() const { return to_hex(bytes); }
SpanId SpanId::random() {
  SpanId id;
  fill_random_nonzero(id.bytes);
  return id;
}

SpanContext current_context() noexcept { return tl_current; }

ContextScope::ContextScope(const SpanContext& context) noexcept : previous_(tl_current) { tl_current = context; }
ContextScope::~ContextScope() { tl_current = previous_; }

void set_span_processor(std::shared_ptr<SpanProcessor> processor) {
  if (processor && !globals().sampler.load()) globals().sampler.store(sampler_from_env());
  bool on = processor != nullptr;
  globals().processor.store(std::move(processor));
  detail::tracing_on.store(on, std::memory_order_relaxed);
}

std::shared_ptr<SpanProcessor> span_processor() { return globals().processor.load(); }
void set_sampler(std::shared_ptr<Sampler> s) { globals().sampler.store(std::move(s)); }
std::shared_ptr<Sampler> sampler() { return globals().sampler.load(); }
bool tracing_enabled() noexcept { return detail::tracing_on.load(std::memory_order_relaxed); }

void Span::start(std::string_view name, SpanKind kind) {
  SpanContext parent = tl_current;
  context_.trace_id = parent.valid() ? parent.trace_id : TraceId::random();
  context_.span_id = SpanId::random();
  std::shared_ptr<Sampler> s = globals().sampler.load();
  context_.sampled = s ? s->should_sample(parent, context_.trace_id, name) : true;
  if (context_.sampled) {
    data_ = std::make_unique<SpanData>();
    data_->name = name;
    data_->context = context_;
    if (parent.valid()) data_->parent_span_id = parent.span_id;
    data_->kind = kind;
    data_->thread_id = os_thread_id();
    data_->start_unix_ns = unix_now_ns();
  }
  previous_ = parent;
  tl_current = context_;
  active_ = true;
}

Span& Span::set_attribute(std::string_view key, AttributeValue value) {
  if (data_) data_->attributes.push_back({std::string(key), std::move(value)});
  return *this;
}

void Span::set_status(StatusCode code, std::string_view message) {
  if (!data_) return;
  data_->status = code;
  data_->status_message = code == StatusCode::error ? std::string(message) : std::string();
}

void Span::finish() noexcept {
  active_ = false;
  tl_current = previous_;
  if (!data_) return;
  data_->end_unix_ns = unix_now_ns();
  if (auto p = globals().processor.load()) p->on_end(std::move(*data_));
  data_.reset();
}

}  // namespace glassbox::trace
