#pragma once
// Preemption (docs/training.md, "Preemption"): SIGTERM and SIGUSR1 — what Slurm sends before a
// time limit with `--signal`, and what a scheduler sends before it kills a job — only set a
// flag. The trainer polls it at every step boundary, the ranks agree (a max-allreduce of the
// flag, so a signal that reached one rank stops all of them at the same step), save a
// checkpoint and exit with kExitPreempted so the job script can requeue; the requeued job
// resumes with resume_from_checkpoint: auto. `autotrain train` installs the handlers for its
// whole life (set-up, training, export); run_training only polls them.
namespace autotrain::train {

// `autotrain train` exit status after a preemption: checkpoint saved, requeue me.
inline constexpr int kExitPreempted = 3;

// Installs the SIGTERM and SIGUSR1 handlers for its lifetime and restores the previous ones on
// destruction. One at a time per process.
class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // The signal number that arrived first since construction, 0 when none has.
  static int received();
};

// "SIGTERM", "SIGUSR1", or "a stop signal" for any other number.
const char* signal_name(int signal_number);

}  // namespace autotrain::train
