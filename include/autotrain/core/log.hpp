#pragma once
// The one logger (DESIGN.md contract 5): rank 0 prints information; any rank prints warnings and
// errors, prefixed "[rank N]". Level from --log-level or AUTOTRAIN_LOG_LEVEL
// (debug|info|warning|error). Inside a Slurm job every line also carries a time stamp and the
// job id, because batch logs are read after the fact.
#include <string>
#include <string_view>

#include "autotrain/core/error.hpp"

namespace autotrain::log {

enum class Level { debug = 0, info = 1, warning = 2, error = 3 };

// Parses "debug|info|warning|warn|error"; throws Error naming `source` otherwise.
Level parse_level(std::string_view text, std::string_view source);
void set_level(Level level);
Level level();
// Called once the rank is known; before that, messages are printed as rank 0.
void set_rank(int rank);
// In an allocation that trains several models, each model's first rank talks for its model and
// every line names the model ("[model 2] "). `talks`: whether this rank prints information.
void set_model(int model, bool talks);
// Adds "<time> [job <id>]" in front of every line (on by default inside Slurm).
void set_timestamps(bool on);

void write(Level level, const std::string& message);

template <typename... Args>
void debug(Args&&... args) {
  if (level() <= Level::debug) write(Level::debug, cat(std::forward<Args>(args)...));
}
template <typename... Args>
void info(Args&&... args) {
  if (level() <= Level::info) write(Level::info, cat(std::forward<Args>(args)...));
}
template <typename... Args>
void warn(Args&&... args) {
  if (level() <= Level::warning) write(Level::warning, cat(std::forward<Args>(args)...));
}
template <typename... Args>
void error(Args&&... args) {
  write(Level::error, cat(std::forward<Args>(args)...));
}

}  // namespace autotrain::log
