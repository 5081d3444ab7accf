#pragma once
// Progress of `prepare` on stderr: a bar redrawn in place on a terminal, a plain line every
// 10% otherwise (Slurm logs, pipes).
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>

#include "autotrain/core/log.hpp"
#include "autotrain/core/strings.hpp"
#include "autotrain/core/timer.hpp"

namespace autotrain::data {

class PrepareProgress {
 public:
  PrepareProgress(bool enabled, uint64_t total_bytes)
      : enabled_(enabled), terminal_(isatty(STDERR_FILENO) == 1), total_bytes_(total_bytes) {}
  ~PrepareProgress() { finish(); }
  PrepareProgress(const PrepareProgress&) = delete;
  PrepareProgress& operator=(const PrepareProgress&) = delete;

  // Ends the bar's line, so what is printed next starts on its own.
  void finish() {
    if (enabled_ && terminal_ && drawn_) std::fputc('\n', stderr);
    drawn_ = false;
  }

  void update(uint64_t bytes, uint64_t tokens) {
    if (!enabled_) return;
    // The total is the input files' size: compressed Parquet holds more text than that.
    total_bytes_ = std::max(total_bytes_, bytes);
    const double fraction =
        total_bytes_ > 0
            ? std::min(1.0, static_cast<double>(bytes) / static_cast<double>(total_bytes_))
            : 1.0;
    const double seconds = std::max(timer_.seconds(), 1e-9);
    const double tokens_per_second = static_cast<double>(tokens) / seconds;
    if (terminal_) {
      constexpr int kWidth = 30;
      const int filled = static_cast<int>(fraction * kWidth);
      std::fprintf(stderr, "\rtokenizing [%s%s] %3.0f%%  %s / %s  %.2fM tokens/s",
                   std::string(filled, '#').c_str(), std::string(kWidth - filled, '.').c_str(),
                   fraction * 100.0, human_bytes(static_cast<double>(bytes)).c_str(),
                   human_bytes(static_cast<double>(total_bytes_)).c_str(), tokens_per_second / 1e6);
      std::fflush(stderr);
      drawn_ = true;
    } else if (fraction >= next_report_) {
      log::info("tokenizing: ", static_cast<int>(fraction * 100.0), "% (",
                human_bytes(static_cast<double>(bytes)), " of ",
                human_bytes(static_cast<double>(total_bytes_)), ", ", tokens, " tokens, ",
                static_cast<uint64_t>(tokens_per_second), " tokens/s)");
      while (next_report_ <= fraction) next_report_ += 0.1;
    }
  }

 private:
  bool enabled_;
  bool terminal_;
  bool drawn_ = false;
  uint64_t total_bytes_;
  double next_report_ = 0.1;
  Timer timer_;
};

}  // namespace autotrain::data
