#pragma once
// Samplers as the OpenTelemetry SDK specifies them. A dropped span still has
// a context (sampled=false), so its children see the parent's decision.
#include <memory>
#include <string>
#include <string_view>

#include "glassbox/trace/span_context.hpp"

namespace glassbox::trace {

class Sampler {
 public:
  virtual ~Sampler() = default;
  /// `parent` is invalid for a root span.
  virtual bool should_sample(const SpanContext& parent, const TraceId& trace_id, std::string_view name) const = 0;
  virtual std::string description() const = 0;
};

std::shared_ptr<Sampler> always_on();
std::shared_ptr<Sampler> always_off();
/// Samples a root when the trace id's last 8 bytes, read as a big-endian
/// number, fall under ratio * 2^64: the decision depends on the trace id only,
/// so every process agrees. `ratio` must lie in [0, 1].
std::shared_ptr<Sampler> trace_id_ratio(double ratio);
/// Follows a valid parent's sampled flag, and `root` for spans without one.
std::shared_ptr<Sampler> parent_based(std::shared_ptr<Sampler> root);

/// The sampler OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG name; the
/// default is parentbased_always_on. A value not accepted throws ConfigError
/// naming the variable, the value and what is accepted.
std::shared_ptr<Sampler> sampler_from_env();
/// Same, from given values (empty means unset).
std::shared_ptr<Sampler> make_sampler(std::string_view name, std::string_view arg);

}  // namespace glassbox::trace
