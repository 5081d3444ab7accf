#include "autotrain/train/metrics.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "autotrain/core/error.hpp"
#include "autotrain/core/log.hpp"

namespace autotrain::train {

namespace {

// A run killed while writing a line leaves it torn (no newline). Appending to it would glue
// the next run's first line onto the fragment, so the fragment is cut off first.
void drop_torn_last_line(const std::filesystem::path& path) {
  std::error_code error;
  const auto size = std::filesystem::file_size(path, error);
  if (error || size == 0) return;
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) return;
  // Back from the end to the last newline, a block at a time.
  std::uintmax_t keep = 0;
  char block[4096];
  for (std::uintmax_t end = size; end > 0 && keep == 0;) {
    const std::uintmax_t begin = end > sizeof block ? end - sizeof block : 0;
    std::fseek(file, static_cast<long>(begin), SEEK_SET);
    const std::size_t got = std::fread(block, 1, static_cast<std::size_t>(end - begin), file);
    for (std::size_t i = got; i > 0; --i) {
      if (block[i - 1] == '\n') {
        keep = begin + i;
        break;
      }
    }
    end = begin;
  }
  std::fclose(file);
  if (keep == size) return;
  std::filesystem::resize_file(path, keep, error);
  AT_CHECK(!error, "cannot cut the torn last line off ", path.string(), ": ", error.message());
  log::warn(path.string(), ": dropped a torn last line (", size - keep,
            " bytes) left by a run that was stopped while writing it");
}

// One JSON object per line, flushed so that readers see it at once.
void append_line(std::FILE* file, const nlohmann::ordered_json& line) {
  const std::string text = line.dump() + "\n";
  std::fputs(text.c_str(), file);
  std::fflush(file);
}

}  // namespace

MetricsLog::MetricsLog(const std::filesystem::path& path) {
  std::filesystem::create_directories(path.parent_path());
  drop_torn_last_line(path);
  file_ = std::fopen(path.c_str(), "a");
  AT_CHECK(file_ != nullptr, "cannot open ", path.string(), " for appending metrics");
}

MetricsLog::~MetricsLog() {
  if (file_) std::fclose(file_);
}

void MetricsLog::write(const StepMetrics& m) {
  nlohmann::ordered_json line;
  line["step"] = m.step;
  line["epoch"] = std::round(m.epoch * 1e4) / 1e4;
  line["loss"] = m.loss;
  for (const auto& [name, value] : m.metrics) line[name] = value;
  if (m.val_loss) {
    line["val_loss"] = *m.val_loss;
    // A perplexity is a language model's; the preference losses have none.
    if (m.val_metrics.empty()) line["val_perplexity"] = std::exp(*m.val_loss);
  }
  for (const auto& [name, value] : m.val_metrics) line["val_" + name] = value;
  line["lr"] = m.lr;
  line["grad_norm"] = m.grad_norm;
  line["tokens_per_s"] = std::round(m.tokens_per_s * 10) / 10;
  line["elapsed_s"] = std::round(m.elapsed_s * 1000) / 1000;
  line["total_steps"] = m.total_steps;
  append_line(file_, line);
}

void MetricsLog::write_run_start(long long step, long long total_steps) {
  nlohmann::ordered_json line;
  line["event"] = "run_start";
  line["step"] = step;
  line["total_steps"] = total_steps;
  // The job `autotrain status` asks Slurm about (squeue) from a login node. Read here rather
  // than from the topology: it names the allocation, not this process's place in it.
  if (const char* job = std::getenv("SLURM_JOB_ID"); job && *job) line["slurm_job_id"] = job;
  append_line(file_, line);
}

void MetricsLog::write_run_stop(long long step, long long total_steps, double elapsed_s,
                                std::string_view stop_signal) {
  nlohmann::ordered_json line;
  line["event"] = "run_stop";
  line["step"] = step;
  line["total_steps"] = total_steps;
  line["elapsed_s"] = std::round(elapsed_s * 1000) / 1000;
  line["reason"] = stop_signal.empty() ? "completed" : "preempted";
  if (!stop_signal.empty()) line["signal"] = stop_signal;
  append_line(file_, line);
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const long long s = std::llround(seconds);
  char text[32];
  if (s >= 3600) {
    std::snprintf(text, sizeof text, "%lldh%02lldm", s / 3600, (s % 3600) / 60);
  } else if (s >= 60) {
    std::snprintf(text, sizeof text, "%lldm%02llds", s / 60, s % 60);
  } else {
    std::snprintf(text, sizeof text, "%llds", s);
  }
  return text;
}

Progress::Progress(bool interactive) : interactive_(interactive) {}

bool Progress::want_bar() {
  if (const char* choice = std::getenv("AUTOTRAIN_PROGRESS"); choice && *choice) {
    const std::string value = choice;
    AT_CHECK(value == "bar" || value == "lines", "AUTOTRAIN_PROGRESS: expected bar or lines, got '",
             value, "'");
    return value == "bar";
  }
  // mpirun gives ranks a pseudo-terminal even when its own output goes to a file, so a terminal
  // is only trusted when no launcher stands between us and it.
  const bool launched = std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE") ||
                        std::getenv("SLURM_STEP_ID") || std::getenv("PMIX_RANK");
  return isatty(STDOUT_FILENO) == 1 && !launched;
}

namespace {

std::string describe(const StepMetrics& m) {
  const double remaining =
      m.step > 0 ? m.elapsed_s / double(m.step) * double(m.total_steps - m.step) : NAN;
  char text[256];
  std::snprintf(text, sizeof text,
                "step %lld/%lld  loss %.4f  lr %.3g  grad %.3f  %.0f tok/s  ETA %s", m.step,
                m.total_steps, m.loss, m.lr, m.grad_norm, m.tokens_per_s,
                format_duration(remaining).c_str());
  std::string line = text;
  // The preference trainers' two figures that say most: how often the chosen completion wins, and
  // by how much.
  for (const auto& [name, value] : m.metrics) {
    if (name == "rewards/accuracies" || name == "rewards/margins") {
      std::snprintf(text, sizeof text, "  %s %.3f", name.c_str() + 8, value);
      line += text;
    }
  }
  if (m.val_loss && m.val_metrics.empty()) {
    std::snprintf(text, sizeof text, "  val_loss %.4f (ppl %.2f)", *m.val_loss,
                  std::exp(*m.val_loss));
    line += text;
  } else if (m.val_loss) {
    std::snprintf(text, sizeof text, "  val_loss %.4f", *m.val_loss);
    line += text;
  }
  return line;
}

}  // namespace

void Progress::update(const StepMetrics& m) {
  if (!interactive_) return;
  constexpr int kWidth = 24;
  const double done = m.total_steps > 0 ? double(m.step) / double(m.total_steps) : 0.0;
  const int filled = static_cast<int>(done * kWidth);
  std::string bar(static_cast<size_t>(filled), '#');
  bar.resize(kWidth, '.');
  std::printf("\r\033[K[%s] %s", bar.c_str(), describe(m).c_str());
  std::fflush(stdout);
  bar_drawn_ = true;
}

void Progress::log_line(const StepMetrics& m) {
  if (interactive_ && bar_drawn_) {
    std::printf("\r\033[K");
    std::fflush(stdout);
  }
  log::info(describe(m));
  if (interactive_) update(m);
}

void Progress::finish() {
  if (interactive_ && bar_drawn_) {
    std::printf("\n");
    std::fflush(stdout);
  }
  bar_drawn_ = false;
}

}  // namespace autotrain::train
