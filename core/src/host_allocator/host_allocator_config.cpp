#include "glassbox/host_allocator/host_allocator_config.hpp"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <map>
#include <sstream>

#include "glassbox/error.hpp"

namespace glassbox::host_allocator {

namespace {

struct Key {
  const char* accepted;
  std::function<void(HostAllocatorConfig&, const std::string&)> apply;  // throws std::invalid_argument
};

bool parse_bool(const std::string& v) {
  if (v == "true" || v == "1" || v == "True") return true;
  if (v == "false" || v == "0" || v == "False") return false;
  throw std::invalid_argument(v);
}

long parse_int(const std::string& v, long lo, long hi) {
  std::size_t used = 0;
  long n = std::stol(v, &used);
  if (used != v.size() || n < lo || n > hi) throw std::invalid_argument(v);
  return n;
}

// "8589934592", "8GiB", "512MiB", "64KiB", "8G", "512M".
std::size_t parse_bytes(const std::string& v) {
  std::size_t used = 0;
  unsigned long long n = std::stoull(v, &used);
  std::string unit = v.substr(used);
  static const std::map<std::string, unsigned> shift{{"", 0},   {"K", 10},   {"KiB", 10}, {"M", 20},  {"MiB", 20},
                                                     {"G", 30}, {"GiB", 30}, {"T", 40},   {"TiB", 40}};
  auto it = shift.find(unit);
  if (it == shift.end() || v[0] == '-') throw std::invalid_argument(v);
  return static_cast<std::size_t>(n) << it->second;
}

// A file path: not empty, no control characters (a newline in a path is
// nearly always a quoting mistake in the service's environment).
std::string parse_path(const std::string& v) {
  if (v.empty() || std::any_of(v.begin(), v.end(), [](unsigned char ch) { return ch < 0x20 || ch == 0x7f; })) {
    throw std::invalid_argument(v);
  }
  return v;
}

const std::map<std::string, Key>& keys() {
  static const std::map<std::string, Key> k{
      {"background_thread", {"true or false", [](auto& c, auto& v) { c.background_thread = parse_bool(v); }}},
      {"size_classes",
       {"pow2 or pow2x4",
        [](auto& c, auto& v) {
          if (v == "pow2")
            c.size_classes = SizeClassPolicy::pow2;
          else if (v == "pow2x4")
            c.size_classes = SizeClassPolicy::pow2x4;
          else
            throw std::invalid_argument(v);
        }}},
      {"use_host_register", {"true or false", [](auto& c, auto& v) { c.use_host_register = parse_bool(v); }}},
      {"register_threads",
       {"an integer from 1 to 64",
        [](auto& c, auto& v) { c.register_threads = static_cast<int>(parse_int(v, 1, 64)); }}},
      {"max_cached_bytes",
       {"bytes, e.g. 1073741824, 512MiB or 8GiB (0: no cap)",
        [](auto& c, auto& v) { c.max_cached_bytes = parse_bytes(v); }}},
      {"oom_snapshot",
       {"a file path with no comma or control character, written on out-of-memory",
        [](auto& c, auto& v) { c.oom_snapshot = parse_path(v); }}},
      {"idle_stream_check", {"true or false", [](auto& c, auto& v) { c.idle_stream_check = parse_bool(v); }}},
      {"nvtx_mem_regions", {"true or false", [](auto& c, auto& v) { c.nvtx_mem_regions = parse_bool(v); }}},
      {"thread_cache",
       {"an integer from 0 to 8", [](auto& c, auto& v) { c.thread_cache = static_cast<int>(parse_int(v, 0, 8)); }}},
  };
  return k;
}

std::string key_list() {
  std::string out;
  for (const auto& [name, _] : keys()) out += (out.empty() ? "" : ", ") + name;
  return out;
}

void apply_item(HostAllocatorConfig& c, const std::string& item, std::string_view source) {
  std::size_t colon = item.find(':');
  std::string key = item.substr(0, colon);
  auto it = keys().find(key);
  if (colon == std::string::npos || it == keys().end()) {
    throw ConfigError(std::string(source) + ": '" + item + "' is not accepted; expected key:value with key one of " +
                      key_list());
  }
  std::string value = item.substr(colon + 1);
  try {
    it->second.apply(c, value);
  } catch (const std::logic_error&) {  // invalid_argument, out_of_range
    throw ConfigError(std::string(source) + ": " + key + ":" + value + " is not accepted; " + key + " takes " +
                      it->second.accepted);
  }
}

}  // namespace

HostAllocatorConfig HostAllocatorConfig::parse(std::string_view text, std::string_view source) {
  HostAllocatorConfig c;
  std::stringstream in{std::string(text)};
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) apply_item(c, item, source);
  }
  return c;
}

HostAllocatorConfig HostAllocatorConfig::from_env() {
  const char* v = std::getenv("GLASSBOX_HOST_ALLOC_CONF");
  return v ? parse(v) : HostAllocatorConfig{};
}

std::string HostAllocatorConfig::to_string() const {
  std::ostringstream o;
  o << "background_thread:" << (background_thread ? "true" : "false")
    << ",size_classes:" << (size_classes == SizeClassPolicy::pow2 ? "pow2" : "pow2x4")
    << ",use_host_register:" << (use_host_register ? "true" : "false") << ",register_threads:" << register_threads
    << ",max_cached_bytes:" << max_cached_bytes << ",thread_cache:" << thread_cache;
  if (!oom_snapshot.empty()) o << ",oom_snapshot:" << oom_snapshot;
  if (nvtx_mem_regions) o << ",nvtx_mem_regions:true";
  if (!idle_stream_check) o << ",idle_stream_check:false";
  return o.str();
}

}  // namespace glassbox::host_allocator
