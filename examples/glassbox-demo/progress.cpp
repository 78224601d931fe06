#include "progress.hpp"

#include <string>

namespace glassbox::demo {

namespace {

constexpr int kBarWidth = 24;

std::string bar(std::int64_t done, std::int64_t total) {
  const auto filled = static_cast<int>(done * kBarWidth / total);
  return "[" + std::string(static_cast<std::size_t>(filled), '#') +
         std::string(static_cast<std::size_t>(kBarWidth - filled), '-') + "]";
}

}  // namespace

Progress::Progress(std::int64_t total, bool terminal, std::FILE* out) : total_(total), terminal_(terminal), out_(out) {}

void Progress::update(std::int64_t done, float loss) {
  done_ = done;
  loss_ = loss;
  const auto now = std::chrono::steady_clock::now();
  if (done != 1 && now < next_print_) return;
  // A terminal bar is cheap to redraw; a log gets a line a second.
  next_print_ = now + (terminal_ ? std::chrono::milliseconds(100) : std::chrono::milliseconds(1000));
  print(false);
}

void Progress::finish() {
  if (printed_ != done_ || terminal_) print(true);
}

void Progress::print(bool final) {
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double rate = secs > 0 ? static_cast<double>(done_) / secs : 0.0;
  std::string line = "step " + std::to_string(done_) + (total_ > 0 ? "/" + std::to_string(total_) : "");
  char buf[96];
  std::snprintf(buf, sizeof buf, "  loss %.4f", static_cast<double>(loss_));
  line += buf;
  std::snprintf(buf, sizeof buf, "  %.1f steps/s", rate);
  line += buf;
  if (total_ > 0 && rate > 0) {
    std::snprintf(buf, sizeof buf, "  ETA %.0fs", static_cast<double>(total_ - done_) / rate);
    line += buf;
  }
  if (terminal_) {
    std::string prefix = total_ > 0 ? bar(done_, total_) + " " : "";
    std::fprintf(out_, "\r%s%s\033[K%s", prefix.c_str(), line.c_str(), final ? "\n" : "");
  } else {
    std::fprintf(out_, "%s\n", line.c_str());
  }
  std::fflush(out_);
  printed_ = done_;
}

}  // namespace glassbox::demo
