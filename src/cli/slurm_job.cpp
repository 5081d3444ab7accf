// Running Slurm's commands from a login node (status): a program with a timeout, and the job
// state squeue or sacct report.
#include "autotrain/cli/slurm_job.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "autotrain/core/error.hpp"
#include "autotrain/core/strings.hpp"

extern char** environ;

namespace autotrain::cli {

namespace {

// Reads what is available on `fd` into `into` (at most `limit` bytes kept); false at end of file.
bool drain(int fd, std::string& into, size_t limit) {
  char buffer[4096];
  const ssize_t got = ::read(fd, buffer, sizeof buffer);
  if (got < 0) return errno == EINTR || errno == EAGAIN;
  if (got == 0) return false;
  into.append(buffer, std::min(static_cast<size_t>(got), limit - std::min(limit, into.size())));
  return true;
}

}  // namespace

CommandResult run_command(const std::vector<std::string>& argv, double timeout_s) {
  AT_CHECK(!argv.empty(), "run_command: no program given");
  CommandResult result;
  int out[2] = {-1, -1};
  int err[2] = {-1, -1};
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
    result.failure = cat("cannot create a pipe: ", std::strerror(errno));
    for (int fd : {out[0], out[1], err[0], err[1]})
      if (fd >= 0) ::close(fd);
    return result;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err[1], 2);
  // Its own process group, so that a timeout also ends what it started.
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);
  std::vector<char*> args;
  for (const auto& word : argv) args.push_back(const_cast<char*>(word.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int error = posix_spawnp(&pid, args[0], &actions, &attributes, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  ::close(out[1]);
  ::close(err[1]);
  if (error != 0) {
    ::close(out[0]);
    ::close(err[0]);
    result.failure = error == ENOENT ? std::string("not found in PATH") : std::strerror(error);
    return result;
  }
  result.started = true;
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(timeout_s));
  const auto left_ms = [&] {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    return static_cast<int>(std::max<long long>(0, left.count()));
  };
  constexpr size_t kLimit = 1 << 16;
  bool out_open = true, err_open = true;
  while ((out_open || err_open) && left_ms() > 0) {
    pollfd fds[2] = {{out_open ? out[0] : -1, POLLIN, 0}, {err_open ? err[0] : -1, POLLIN, 0}};
    if (::poll(fds, 2, left_ms()) < 0 && errno != EINTR) break;
    if (fds[0].revents != 0) out_open = drain(out[0], result.output, kLimit);
    if (fds[1].revents != 0) err_open = drain(err[0], result.errors, kLimit);
  }
  ::close(out[0]);
  ::close(err[0]);
  int status = 0;
  pid_t waited = 0;
  // It closed its output; give it what is left of the time to exit.
  while ((waited = ::waitpid(pid, &status, WNOHANG)) == 0 && left_ms() > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (waited == 0) {
    result.timed_out = true;
    ::kill(-pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    return result;
  }
  if (waited == pid && WIFEXITED(status)) result.exit_status = WEXITSTATUS(status);
  return result;
}

std::optional<std::string> parse_job_state(std::string_view output) {
  for (const std::string& line : split(output, '\n')) {
    const std::string text = trim(line);
    if (text.empty()) continue;
    const std::string word = text.substr(0, text.find_first_of(" \t"));
    const bool upper_word = std::all_of(word.begin(), word.end(),
                                        [](char c) { return (c >= 'A' && c <= 'Z') || c == '_'; });
    if (!upper_word) return std::nullopt;
    return word;
  }
  return std::nullopt;
}

namespace {

// The first line a command printed on stderr (else stdout), for a message.
std::string what_it_said(const CommandResult& result) {
  for (const std::string* text : {&result.errors, &result.output}) {
    for (const std::string& line : split(*text, '\n')) {
      const std::string trimmed = trim(line);
      if (!trimmed.empty()) return trimmed.substr(0, 160);
    }
  }
  return "nothing";
}

// Why `name` did not give a state, or "" when it gave one in `state`.
std::string ask(const std::string& name, const std::vector<std::string>& argv, double timeout_s,
                std::optional<std::string>& state) {
  const CommandResult result = run_command(argv, timeout_s);
  if (!result.started) return cat(name, ": ", result.failure);
  if (result.timed_out) {
    return cat(name, " did not answer within ", timeout_s,
               " s (is the Slurm controller reachable from here?)");
  }
  if (result.exit_status == 0) {
    state = parse_job_state(result.output);
    if (state) return "";
    if (trim(result.output).empty()) return cat(name, " does not list the job");
    return cat(name, " printed '", what_it_said(result), "'");
  }
  return cat(name, " exited with status ", result.exit_status, ": ", what_it_said(result));
}

}  // namespace

SlurmJobState query_slurm_job(const std::string& job_id, double timeout_s) {
  SlurmJobState job;
  job.job_id = job_id;
  const std::string squeue_failure =
      ask("squeue", {"squeue", "-h", "-j", job_id, "-o", "%T"}, timeout_s, job.state);
  if (job.state) {
    job.source = "squeue";
    return job;
  }
  // squeue forgets a job MinJobAge after it ends; accounting (when the site has it) does not.
  // Without squeue, or when the controller does not answer, sacct is not tried either.
  if (squeue_failure.find("not found in PATH") != std::string::npos ||
      squeue_failure.find("did not answer") != std::string::npos) {
    job.unknown_reason = squeue_failure;
    return job;
  }
  const std::string sacct_failure =
      ask("sacct", {"sacct", "-n", "-X", "-P", "-j", job_id, "-o", "State"}, timeout_s, job.state);
  if (job.state) {
    job.source = "sacct";
    return job;
  }
  job.unknown_reason = cat(squeue_failure, "; ", sacct_failure);
  return job;
}

}  // namespace autotrain::cli
