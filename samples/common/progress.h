// Progress display for long loops: a redrawn bar with rate, ETA and a caller's suffix
// (running loss, accuracy) on a terminal; plain lines every 10% when output is a file or
// a pipe, so CI logs stay readable.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace samples {

class Progress {
 public:
  Progress(std::string label, int64_t total)
      : label_(std::move(label)), total_(total > 0 ? total : 1), tty_(isatty(STDOUT_FILENO) != 0),
        start_(Clock::now()), last_draw_(start_) {}

  /// Reports `done` of `total` units; redraws at most 10 times a second.
  void update(int64_t done, const std::string& suffix) {
    const auto now = Clock::now();
    const bool final = done >= total_;
    if (tty_) {
      if (!final && now - last_draw_ < std::chrono::milliseconds(100)) return;
      last_draw_ = now;
      draw(done, suffix, now);
      if (final) std::printf("\n");
    } else {
      const int64_t decile = done * 10 / total_;
      if (decile <= last_decile_ && !final) return;
      last_decile_ = decile;
      std::printf("%s %3d%% %lld/%lld %s  %s\n", label_.c_str(), static_cast<int>(done * 100 / total_),
                  static_cast<long long>(done), static_cast<long long>(total_), rate(done, now).c_str(),
                  suffix.c_str());
    }
    std::fflush(stdout);
  }

 private:
  using Clock = std::chrono::steady_clock;

  std::string rate(int64_t done, Clock::time_point now) const {
    const double seconds = std::chrono::duration<double>(now - start_).count();
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.0f it/s", seconds > 0 ? static_cast<double>(done) / seconds : 0.0);
    return buf;
  }

  void draw(int64_t done, const std::string& suffix, Clock::time_point now) const {
    constexpr int kWidth = 30;
    const int filled = static_cast<int>(done * kWidth / total_);
    const double seconds = std::chrono::duration<double>(now - start_).count();
    const double eta = done > 0 ? seconds * static_cast<double>(total_ - done) / static_cast<double>(done) : 0.0;
    std::string bar(static_cast<size_t>(filled), '#');
    bar.resize(kWidth, '.');
    std::printf("\r%s [%s] %3d%% %s eta %4.0fs  %s\033[K", label_.c_str(), bar.c_str(),
                static_cast<int>(done * 100 / total_), rate(done, now).c_str(), eta, suffix.c_str());
  }

  std::string label_;
  int64_t total_;
  bool tty_;
  Clock::time_point start_;
  Clock::time_point last_draw_;
  int64_t last_decile_ = -1;
};

}  // namespace samples
