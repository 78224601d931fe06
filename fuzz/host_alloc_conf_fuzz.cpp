// GLASSBOX_HOST_ALLOC_CONF parsing: any text either parses or throws a
// ConfigError that names the variable; what parses prints back (to_string) as
// text that parses to the same settings.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "fuzz_check.hpp"
#include "glassbox/error.hpp"
#include "glassbox/host_allocator/host_allocator_config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using glassbox::host_allocator::HostAllocatorConfig;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  HostAllocatorConfig config;
  try {
    config = HostAllocatorConfig::parse(text);
  } catch (const glassbox::ConfigError& e) {
    fuzz_check(std::string_view(e.what()).find("GLASSBOX_HOST_ALLOC_CONF") != std::string_view::npos,
               "a ConfigError names GLASSBOX_HOST_ALLOC_CONF", e.what());
    return 0;
  }
  std::string printed = config.to_string();
  fuzz_check(HostAllocatorConfig::parse(printed).to_string() == printed, "to_string() parses back to itself", printed);
  return 0;
}
