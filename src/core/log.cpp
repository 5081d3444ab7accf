#include "autotrain/core/log.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>

namespace autotrain::log {
namespace {

Level level_from_env() {
  const char* text = std::getenv("AUTOTRAIN_LOG_LEVEL");
  if (text == nullptr || *text == '\0') return Level::info;
  try {
    return parse_level(text, "AUTOTRAIN_LOG_LEVEL");
  } catch (const Error&) {
    std::fprintf(stderr,
                 "warning: ignoring AUTOTRAIN_LOG_LEVEL=%s (expected debug|info|warning|error)\n",
                 text);
    return Level::info;
  }
}

std::atomic<Level> g_level{level_from_env()};
std::atomic<int> g_rank{0};
std::atomic<bool> g_talks{true};
std::atomic<int> g_model{-1};
std::atomic<bool> g_timestamps{std::getenv("SLURM_JOB_ID") != nullptr};
std::mutex g_write_mutex;

std::string prefix() {
  if (!g_timestamps.load()) return {};
  const auto now = std::chrono::system_clock::now();
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  std::tm local{};
  localtime_r(&seconds, &local);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", &local);
  const char* job = std::getenv("SLURM_JOB_ID");
  return job ? cat(stamp, " [job ", job, "] ") : cat(stamp, " ");
}

std::string model_prefix() {
  const int model = g_model.load();
  return model < 0 ? std::string() : cat("[model ", model, "] ");
}

}  // namespace

Level parse_level(std::string_view text, std::string_view source) {
  if (text == "debug") return Level::debug;
  if (text == "info") return Level::info;
  if (text == "warning" || text == "warn") return Level::warning;
  if (text == "error") return Level::error;
  throw Error(
      cat(source, ": unknown log level '", text, "' (expected debug, info, warning or error)"));
}

void set_level(Level level) {
  g_level = level;
}
Level level() {
  return g_level.load();
}
void set_rank(int rank) {
  g_rank = rank;
  g_talks = rank == 0;
}
void set_model(int model, bool talks) {
  g_model = model;
  g_talks = talks;
}
void set_timestamps(bool on) {
  g_timestamps = on;
}

void write(Level level, const std::string& message) {
  const int rank = g_rank.load();
  if (level <= Level::info && !g_talks.load()) return;  // rank 0 talks, everyone computes
  std::string line = prefix() + model_prefix();
  switch (level) {
    case Level::debug:
      line += cat("[rank ", rank, "] debug: ");
      break;
    case Level::info:
      break;
    case Level::warning:
      line += cat("[rank ", rank, "] warning: ");
      break;
    case Level::error:
      line += cat("[rank ", rank, "] error: ");
      break;
  }
  line += message;
  line += '\n';
  std::lock_guard lock(g_write_mutex);
  std::FILE* stream = level >= Level::warning ? stderr : stdout;
  std::fputs(line.c_str(), stream);
  std::fflush(stream);
}

}  // namespace autotrain::log
