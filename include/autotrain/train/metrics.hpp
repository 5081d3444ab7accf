#pragma once
// What a run reports while it trains (rank 0 only): <project_name>/metrics.jsonl, one JSON line
// per logging step, and progress on the terminal — a live bar when stdout is a terminal, plain
// lines when it is a file (Slurm logs).
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace autotrain::train {

struct StepMetrics {
  long long step = 0;  // optimizer steps done
  long long total_steps = 0;
  double epoch = 0;  // fractional epochs done
  double loss = 0;   // mean training loss of the step, over all ranks
  std::optional<double> val_loss;
  double lr = 0;
  double grad_norm = 0;
  double tokens_per_s = 0;  // over the steps since the previous report
  double elapsed_s = 0;
  double comm_wait_fraction = 0;
  // What else the trainer logs, by TRL's names (dpo, orpo: rewards/chosen, ...), of the step and
  // of the evaluation (written with val_ before the name).
  std::vector<std::pair<std::string, double>> metrics, val_metrics;
};

// Appends one line per logged step to metrics.jsonl (flushed, so `autotrain status` and
// `tail -f` see it at once). A resumed run appends to the same file, after cutting off a torn
// last line (no newline) that a killed run left.
//
// Each run (process) also brackets its step lines with two records, so that a reader can tell
// the runs of a resumed training apart and knows which Slurm job to ask about:
//   {"event":"run_start","step":S,"total_steps":N,"slurm_job_id":"123"}   (job id inside Slurm)
//   {"event":"run_stop","step":S,"total_steps":N,"elapsed_s":T,"reason":"completed"}
//   {"event":"run_stop",...,"reason":"preempted","signal":"SIGUSR1"}      (checkpoint of S saved)
// They have no "loss" or "val_loss", so readers that collect losses per step pass over them.
class MetricsLog {
 public:
  explicit MetricsLog(const std::filesystem::path& path);
  ~MetricsLog();
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;
  void write(const StepMetrics& metrics);
  // `step`: the step the run starts from (0, or the resumed checkpoint's step).
  void write_run_start(long long step, long long total_steps);
  // `step`: the steps done when the run stopped; `stop_signal` empty when it completed them all.
  void write_run_stop(long long step, long long total_steps, double elapsed_s,
                      std::string_view stop_signal);

 private:
  std::FILE* file_ = nullptr;
};

class Progress {
 public:
  explicit Progress(bool interactive);
  // Called every step: redraws the bar on a terminal.
  void update(const StepMetrics& metrics);
  // Called at logging steps: a permanent line (on a terminal, above the bar).
  void log_line(const StepMetrics& metrics);
  void finish();

  // A live bar only on a terminal with no launcher in between (mpirun hands its ranks a
  // pseudo-terminal even when its own output goes to a file); AUTOTRAIN_PROGRESS=bar|lines
  // overrides.
  static bool want_bar();

 private:
  bool interactive_;
  bool bar_drawn_ = false;
};

std::string format_duration(double seconds);  // "1h02m", "3m05s", "12s"

}  // namespace autotrain::train
