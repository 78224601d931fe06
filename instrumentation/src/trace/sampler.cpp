// The OpenTelemetry SDK's built-in samplers and their environment variables.
#include <cmath>
#include <cstdlib>
#include <string>

#include "glassbox/error.hpp"
#include "glassbox/trace/sampler.hpp"

namespace glassbox::trace {

namespace {

class Fixed final : public Sampler {
 public:
  explicit Fixed(bool on) : on_(on) {}
  bool should_sample(const SpanContext&, const TraceId&, std::string_view) const override { return on_; }
  std::string description() const override { return on_ ? "AlwaysOnSampler" : "AlwaysOffSampler"; }

 private:
  bool on_;
};

class Ratio final : public Sampler {
 public:
  explicit Ratio(double ratio) : ratio_(ratio) {
    // ratio * 2^64, saturated; ratio 1 samples everything.
    threshold_ = ratio >= 1.0 ? ~std::uint64_t{0} : static_cast<std::uint64_t>(std::ldexp(ratio, 64));
  }
  bool should_sample(const SpanContext&, const TraceId& id, std::string_view) const override {
    if (ratio_ >= 1.0) return true;
    std::uint64_t v = 0;
    for (std::size_t i = 8; i < 16; ++i) v = (v << 8) | id.bytes[i];
    return v < threshold_;
  }
  std::string description() const override { return "TraceIdRatioBased{" + std::to_string(ratio_) + "}"; }

 private:
  double ratio_;
  std::uint64_t threshold_;
};

class ParentBased final : public Sampler {
 public:
  explicit ParentBased(std::shared_ptr<Sampler> root) : root_(std::move(root)) {}
  bool should_sample(const SpanContext& parent, const TraceId& id, std::string_view name) const override {
    return parent.valid() ? parent.sampled : root_->should_sample(parent, id, name);
  }
  std::string description() const override { return "ParentBased{root=" + root_->description() + "}"; }

 private:
  std::shared_ptr<Sampler> root_;
};

constexpr const char* kAccepted =
    "always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio";

double parse_ratio(std::string_view arg) {
  if (arg.empty()) return 1.0;
  std::string s(arg);
  char* end = nullptr;
  double r = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || !(r >= 0.0 && r <= 1.0)) {
    throw ConfigError("OTEL_TRACES_SAMPLER_ARG='" + s + "' is not accepted; expected a number from 0 to 1");
  }
  return r;
}

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

}  // namespace

std::shared_ptr<Sampler> always_on() { return std::make_shared<Fixed>(true); }
std::shared_ptr<Sampler> always_off() { return std::make_shared<Fixed>(false); }

std::shared_ptr<Sampler> trace_id_ratio(double ratio) {
  if (!(ratio >= 0.0 && ratio <= 1.0)) {
    throw ConfigError("trace_id_ratio(" + std::to_string(ratio) + "): the ratio must lie in [0, 1]");
  }
  return std::make_shared<Ratio>(ratio);
}

std::shared_ptr<Sampler> parent_based(std::shared_ptr<Sampler> root) {
  return std::make_shared<ParentBased>(std::move(root));
}

std::shared_ptr<Sampler> make_sampler(std::string_view name, std::string_view arg) {
  if (name.empty() || name == "parentbased_always_on") return parent_based(always_on());
  if (name == "always_on") return always_on();
  if (name == "always_off") return always_off();
  if (name == "traceidratio") return trace_id_ratio(parse_ratio(arg));
  if (name == "parentbased_always_off") return parent_based(always_off());
  if (name == "parentbased_traceidratio") return parent_based(trace_id_ratio(parse_ratio(arg)));
  throw ConfigError("OTEL_TRACES_SAMPLER='" + std::string(name) + "' is not accepted; expected one of " + kAccepted);
}

std::shared_ptr<Sampler> sampler_from_env() {
  return make_sampler(env_or_empty("OTEL_TRACES_SAMPLER"), env_or_empty("OTEL_TRACES_SAMPLER_ARG"));
}

}  // namespace glassbox::trace
