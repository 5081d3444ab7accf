#pragma once
// Asking Slurm about a job from a login node (status): no MPI, no shell, every command under a
// timeout.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace autotrain::cli {

// The outcome of running a program (looked up in PATH, no shell) with stdin from /dev/null.
struct CommandResult {
  bool started = false;    // false: `failure` says why (e.g. "not found in PATH")
  bool timed_out = false;  // then it was killed, with its process group
  int exit_status = -1;    // when it exited on its own; -1 when a signal ended it
  std::string output;      // stdout
  std::string errors;      // stderr
  std::string failure;
};
CommandResult run_command(const std::vector<std::string>& argv, double timeout_s);

// What Slurm says about a job: squeue while the controller lists it, then sacct (accounting)
// for a job that ended long enough ago (MinJobAge, 300 s by default) for squeue to forget it.
struct SlurmJobState {
  std::string job_id;
  std::optional<std::string> state;  // "RUNNING", "PENDING", "REQUEUED", "COMPLETED", ...
  std::string source;                // "squeue" or "sacct", with a state
  std::string unknown_reason;        // without one: why, naming the command and what it said
};

// The job state in `output` of `squeue -h -o %T` or `sacct -n -P -o State`: the first word of
// the first non-empty line ("CANCELLED by 0" -> CANCELLED), when it is an upper-case word.
std::optional<std::string> parse_job_state(std::string_view output);

inline constexpr double kSlurmTimeoutSeconds = 10;
SlurmJobState query_slurm_job(const std::string& job_id, double timeout_s = kSlurmTimeoutSeconds);
}  // namespace autotrain::cli
