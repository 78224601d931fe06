// traceparent and tracestate parsing. Input: the traceparent value, a newline,
// the tracestate value. Properties: a parsed context formats back to a value
// that parses to the same context; normalizing tracestate is idempotent and
// never lengthens it; extract() agrees with the two parsers.
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.hpp"
#include "glassbox/trace/propagation.hpp"

namespace gt = glassbox::trace;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  std::size_t newline = input.find('\n');
  std::string_view parent = input.substr(0, newline);
  std::string_view state = newline == std::string_view::npos ? std::string_view{} : input.substr(newline + 1);

  auto context = gt::parse_traceparent(parent);
  if (context) {
    fuzz_check(context->valid() && context->remote, "a parsed traceparent is valid and remote", parent);
    std::string printed = gt::format_traceparent(*context);
    auto again = gt::parse_traceparent(printed);
    fuzz_check(again && *again == *context, "format_traceparent parses back to the same context", printed);
  }
  std::string normalized = gt::normalize_tracestate(state);
  fuzz_check(normalized.size() <= state.size(), "normalizing never lengthens tracestate", state);
  fuzz_check(gt::normalize_tracestate(normalized) == normalized, "normalizing tracestate is idempotent", normalized);

  auto extracted = gt::extract([&](std::string_view name) { return name == gt::kTraceparentHeader ? parent : state; });
  fuzz_check(extracted.context.valid() == context.has_value(), "extract() finds exactly the valid traceparents",
             parent);
  fuzz_check(extracted.tracestate == (context ? normalized : ""), "extract() keeps tracestate only with a context",
             state);
  return 0;
}
