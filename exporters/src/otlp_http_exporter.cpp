#include "glassbox/exporters/otlp_http_exporter.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>

#include "env_values.hpp"
#include "glassbox/error.hpp"
#include "glassbox/exporters/otlp_json.hpp"
#include "gzip.hpp"

namespace glassbox::exporters {

namespace {

using Clock = SpanExporter::Clock;
using std::chrono::milliseconds;

// What one POST came back with.
struct Attempt {
  CURLcode code = CURLE_OK;
  long status = 0;
  std::optional<milliseconds> retry_after;
  std::string body;
};

enum class Outcome { success, retry, reject, fail, cancelled };

// OTLP/HTTP: 429, 502, 503, 504 and failures to connect or to get an answer
// are retryable; other answers are not, and neither is a request curl cannot make.
Outcome classify(const Attempt& a) {
  switch (a.code) {
    case CURLE_OK:
      break;
    case CURLE_ABORTED_BY_CALLBACK:
      return Outcome::cancelled;
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
    case CURLE_NOT_BUILT_IN:
    case CURLE_OUT_OF_MEMORY:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CACERT_BADFILE:
      return Outcome::fail;
    default:
      return Outcome::retry;
  }
  if (a.status >= 200 && a.status < 300) return Outcome::success;
  if (a.status == 429 || a.status == 502 || a.status == 503 || a.status == 504) return Outcome::retry;
  return Outcome::reject;
}

// Retry-After is delay-seconds or an HTTP-date (RFC 9110 section 10.2.3).
std::optional<milliseconds> parse_retry_after(std::string_view value) {
  if (value.empty()) return std::nullopt;
  if (std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return milliseconds(1000 * std::stoll(std::string(value.substr(0, 9))));
  }
  std::time_t when = curl_getdate(std::string(value).c_str(), nullptr);
  if (when < 0) return std::nullopt;
  return milliseconds(1000 * std::max<std::time_t>(0, when - std::time(nullptr)));
}

// The spans a partial success names as rejected (0 when it names none).
std::size_t rejected_spans(const std::string& body) {
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (!j.is_object() || !j.contains("partialSuccess")) return 0;
  const auto& r = j["partialSuccess"].value("rejectedSpans", nlohmann::json());
  if (r.is_number_unsigned()) return r.get<std::size_t>();
  if (r.is_string()) return static_cast<std::size_t>(std::strtoull(r.get<std::string>().c_str(), nullptr, 10));
  return 0;
}

std::string traces_url(const std::string& base) { return base + (base.ends_with('/') ? "v1/traces" : "/v1/traces"); }

void check_url(const std::string& url, const std::string& source) {
  static const std::regex form(R"(^https?://[^/?#\s]+[^\s]*$)", std::regex::icase);
  if (!std::regex_match(url, form)) {
    throw ConfigError(source + "='" + url + "' is not accepted; expected an http:// or https:// URL with a host, " +
                      "e.g. http://localhost:4318");
  }
}

void init_curl_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) throw Error("OTLP exporter: curl_global_init failed");
  });
}

}  // namespace

// One keep-alive connection, driven through a multi handle so that cancel()
// can wake the wait at once (curl_multi_wakeup) instead of at curl's next
// progress callback, up to a second later.
class OtlpHttpExporter::Http {
 public:
  explicit Http(const OtlpHttpOptions& o) : easy_(curl_easy_init()), multi_(curl_multi_init()) {
    if (!easy_ || !multi_) throw Error("OTLP exporter: cannot create a curl handle");
    add_header("Content-Type: application/json");
    add_header("Expect:");  // no 100-continue round trip for large bodies
    if (o.gzip) add_header("Content-Encoding: gzip");
    for (const auto& [k, v] : o.headers) add_header(k + ": " + v);
    user_agent_ = "glassbox-otlp/" + std::string(glassbox_version());
    curl_easy_setopt(easy_, CURLOPT_URL, o.url.c_str());
    curl_easy_setopt(easy_, CURLOPT_HTTPHEADER, headers_);
    curl_easy_setopt(easy_, CURLOPT_USERAGENT, user_agent_.c_str());
    curl_easy_setopt(easy_, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy_, CURLOPT_WRITEFUNCTION, &Http::on_body);
    curl_easy_setopt(easy_, CURLOPT_WRITEDATA, &response_);
  }
  ~Http() {
    curl_multi_cleanup(multi_);
    curl_easy_cleanup(easy_);
    curl_slist_free_all(headers_);
  }
  Http(const Http&) = delete;
  Http& operator=(const Http&) = delete;

  Attempt post(const std::string& body, milliseconds timeout, const std::atomic<bool>& cancelled) {
    response_.clear();
    long ms = std::max<long>(1, static_cast<long>(timeout.count()));
    curl_easy_setopt(easy_, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(easy_, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
    curl_easy_setopt(easy_, CURLOPT_TIMEOUT_MS, ms);
    curl_easy_setopt(easy_, CURLOPT_CONNECTTIMEOUT_MS, ms);
    Attempt a;
    a.code = perform(cancelled);
    curl_easy_getinfo(easy_, CURLINFO_RESPONSE_CODE, &a.status);
    if (curl_header* h = nullptr;
        a.code == CURLE_OK && curl_easy_header(easy_, "Retry-After", 0, CURLH_HEADER, -1, &h) == CURLHE_OK) {
      a.retry_after = parse_retry_after(h->value);
    }
    a.body = std::move(response_);
    return a;
  }

  void wake() noexcept { curl_multi_wakeup(multi_); }

 private:
  CURLcode perform(const std::atomic<bool>& cancelled) {
    curl_multi_add_handle(multi_, easy_);
    CURLcode result = CURLE_ABORTED_BY_CALLBACK;
    for (bool done = false; !done;) {
      int running = 0;
      curl_multi_perform(multi_, &running);
      int left = 0;
      while (CURLMsg* m = curl_multi_info_read(multi_, &left)) {
        if (m->msg == CURLMSG_DONE) {
          result = m->data.result;
          done = true;
        }
      }
      if (!done && cancelled.load()) break;
      if (!done) curl_multi_poll(multi_, nullptr, 0, 1000, nullptr);
    }
    curl_multi_remove_handle(multi_, easy_);
    return result;
  }

  static std::size_t on_body(char* data, std::size_t size, std::size_t n, void* out) {
    static_cast<std::string*>(out)->append(data, size * n);
    return size * n;
  }

  void add_header(const std::string& h) {
    curl_slist* l = curl_slist_append(headers_, h.c_str());
    if (!l) throw Error("OTLP exporter: out of memory for headers");
    headers_ = l;
  }

  CURL* easy_;
  CURLM* multi_;
  curl_slist* headers_ = nullptr;
  std::string user_agent_;
  std::string response_;
};

bool otlp_configured_in_env() {
  return detail::first_env({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"}).has_value();
}

OtlpHttpOptions OtlpHttpOptions::from_env() {
  OtlpHttpOptions o;
  if (auto v = detail::env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")) {
    check_url(*v, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
    o.url = *v;
  } else if (auto b = detail::env("OTEL_EXPORTER_OTLP_ENDPOINT")) {
    check_url(*b, "OTEL_EXPORTER_OTLP_ENDPOINT");
    o.url = traces_url(*b);
  }
  // The signal-specific variable replaces the general one, as the SDK specification says.
  if (auto h = detail::first_env({"OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS"})) {
    o.headers = detail::parse_key_values(h->second, h->first);
  }
  if (auto t = detail::first_env({"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT"})) {
    o.timeout = detail::parse_millis(t->second, t->first, 1);
  }
  if (auto c = detail::first_env({"OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "OTEL_EXPORTER_OTLP_COMPRESSION"})) {
    if (c->second != "gzip" && c->second != "none") {
      throw ConfigError(std::string(c->first) + "='" + c->second + "' is not accepted; expected gzip or none");
    }
    o.gzip = c->second == "gzip";
  }
  if (auto p = detail::first_env({"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"});
      p && p->second != "http/json") {
    throw ConfigError(std::string(p->first) + "='" + p->second +
                      "' is not accepted; glassbox's exporter speaks http/json only (set http/json or unset it; "
                      "an OpenTelemetry Collector takes JSON on its OTLP/HTTP port 4318)");
  }
  o.resource = Resource::from_env();
  return o;
}

OtlpHttpExporter::OtlpHttpExporter(OtlpHttpOptions options)
    : options_(std::move(options)),
      retries_(options_.registry
                   ->counter("glassbox_otlp_export_retries_total",
                             "OTLP export requests repeated after a retryable failure (429, 502-504, no connection)")
                   .with()),
      rng_(std::random_device{}()) {
  check_url(options_.url, "OTLP traces URL");
  init_curl_once();
  http_ = std::make_unique<Http>(options_);
}

OtlpHttpExporter::~OtlpHttpExporter() = default;

ExportResult OtlpHttpExporter::export_spans(std::span<const trace::SpanData> spans, Clock::time_point deadline) {
  if (spans.empty()) return {};
  const ExportResult all_failed{spans.size(), DropReason::export_failed};
  std::string body = otlp_json(spans, options_.resource);
  if (options_.gzip) body = detail::gzip(body);
  for (int attempt = 1;; ++attempt) {
    auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    if (cancelled_) return {spans.size(), DropReason::shutdown};
    if (left.count() <= 0) return all_failed;
    Attempt a = http_->post(body, std::min(options_.timeout, left), cancelled_);
    switch (classify(a)) {
      case Outcome::success:
        return {std::min(rejected_spans(a.body), spans.size()), DropReason::rejected};
      case Outcome::reject:
        return {spans.size(), DropReason::rejected};
      case Outcome::fail:
        return all_failed;
      case Outcome::cancelled:
        return {spans.size(), DropReason::shutdown};
      case Outcome::retry:
        break;
    }
    milliseconds wait = a.retry_after.value_or(backoff(attempt));
    if (attempt >= options_.retry.max_attempts || Clock::now() + wait >= deadline) return all_failed;
    retries_.inc();
    if (!sleep_unless_cancelled(wait)) return {spans.size(), DropReason::shutdown};
  }
}

void OtlpHttpExporter::cancel() noexcept {
  {
    std::lock_guard lock(sleep_mu_);
    cancelled_ = true;
  }
  sleep_cv_.notify_all();
  http_->wake();
}

milliseconds OtlpHttpExporter::backoff(int attempt) {
  const RetryPolicy& p = options_.retry;
  double base = static_cast<double>(p.initial_backoff.count()) * std::pow(p.multiplier, attempt - 1);
  base = std::min(base, static_cast<double>(p.max_backoff.count()));
  std::uniform_real_distribution<double> factor(1.0 - p.jitter, 1.0 + p.jitter);
  return milliseconds(static_cast<std::int64_t>(std::llround(base * factor(rng_))));
}

bool OtlpHttpExporter::sleep_unless_cancelled(milliseconds wait) {
  std::unique_lock lock(sleep_mu_);
  return !sleep_cv_.wait_for(lock, wait, [&] { return cancelled_.load(); });
}

std::shared_ptr<BatchSpanProcessor> make_otlp_processor(OtlpHttpOptions options, BatchOptions batch) {
  return std::make_shared<BatchSpanProcessor>(std::make_unique<OtlpHttpExporter>(std::move(options)), batch);
}

}  // namespace glassbox::exporters
