#include "otlp_http_sender.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <nlohmann/json.hpp>
#include <optional>

#include "glassbox/error.hpp"
#include "gzip.hpp"

namespace glassbox::exporters::detail {

namespace {

using std::chrono::milliseconds;

// What one POST came back with.
struct Attempt {
  CURLcode code = CURLE_OK;
  long status = 0;
  std::optional<milliseconds> retry_after;
  std::string body;
};

enum class Verdict { success, retry, reject, fail, cancelled };

// OTLP/HTTP: 429, 502, 503, 504 and failures to connect or to get an answer
// are retryable; other answers are not, and neither is a request curl cannot make.
Verdict classify(const Attempt& a) {
  switch (a.code) {
    case CURLE_OK:
      break;
    case CURLE_ABORTED_BY_CALLBACK:
      return Verdict::cancelled;
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
    case CURLE_NOT_BUILT_IN:
    case CURLE_OUT_OF_MEMORY:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CACERT_BADFILE:
      return Verdict::fail;
    default:
      return Verdict::retry;
  }
  if (a.status >= 200 && a.status < 300) return Verdict::success;
  if (a.status == 429 || a.status == 502 || a.status == 503 || a.status == 504) return Verdict::retry;
  return Verdict::reject;
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
class OtlpHttpSender::Http {
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

OtlpHttpSender::OtlpHttpSender(const OtlpHttpOptions& options, OtlpSignal signal)
    : timeout_(options.timeout),
      gzip_(options.gzip),
      retry_(options.retry),
      retries_(options.registry
                   ->counter("glassbox_otlp_export_retries_total",
                             "OTLP export requests repeated after a retryable failure (429, 502-504, no connection)",
                             {"signal"})
                   .with({to_string(signal)})),
      rng_(std::random_device{}()) {
  check_otlp_url(options.url, std::string("OTLP ") + std::string(to_string(signal)) + " URL");
  init_curl_once();
  http_ = std::make_unique<Http>(options);
}

OtlpHttpSender::~OtlpHttpSender() = default;

SendResult OtlpHttpSender::send(std::string json, Clock::time_point deadline) {
  if (gzip_) json = gzip(json);
  for (int attempt = 1;; ++attempt) {
    auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    if (cancelled_) return {SendOutcome::cancelled, {}};
    if (left.count() <= 0) return {SendOutcome::failed, {}};
    Attempt a = http_->post(json, std::min(timeout_, left), cancelled_);
    switch (classify(a)) {
      case Verdict::success:
        return {SendOutcome::delivered, std::move(a.body)};
      case Verdict::reject:
        return {SendOutcome::rejected, std::move(a.body)};
      case Verdict::fail:
        return {SendOutcome::failed, std::move(a.body)};
      case Verdict::cancelled:
        return {SendOutcome::cancelled, {}};
      case Verdict::retry:
        break;
    }
    milliseconds wait = a.retry_after.value_or(backoff(attempt));
    if (attempt >= retry_.max_attempts || Clock::now() + wait >= deadline) return {SendOutcome::failed, {}};
    retries_.inc();
    if (!sleep_unless_cancelled(wait)) return {SendOutcome::cancelled, {}};
  }
}

void OtlpHttpSender::cancel() noexcept {
  {
    std::lock_guard lock(sleep_mu_);
    cancelled_ = true;
  }
  sleep_cv_.notify_all();
  http_->wake();
}

milliseconds OtlpHttpSender::backoff(int attempt) {
  double base = static_cast<double>(retry_.initial_backoff.count()) * std::pow(retry_.multiplier, attempt - 1);
  base = std::min(base, static_cast<double>(retry_.max_backoff.count()));
  std::uniform_real_distribution<double> factor(1.0 - retry_.jitter, 1.0 + retry_.jitter);
  return milliseconds(static_cast<std::int64_t>(std::llround(base * factor(rng_))));
}

bool OtlpHttpSender::sleep_unless_cancelled(milliseconds wait) {
  std::unique_lock lock(sleep_mu_);
  return !sleep_cv_.wait_for(lock, wait, [&] { return cancelled_.load(); });
}

std::size_t rejected_in_partial_success(const std::string& body, const char* field) {
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (!j.is_object() || !j.contains("partialSuccess")) return 0;
  const auto& r = j["partialSuccess"].value(field, nlohmann::json());
  if (r.is_number_unsigned()) return r.get<std::size_t>();
  if (r.is_string()) return static_cast<std::size_t>(std::strtoull(r.get<std::string>().c_str(), nullptr, 10));
  return 0;
}

}  // namespace glassbox::exporters::detail
