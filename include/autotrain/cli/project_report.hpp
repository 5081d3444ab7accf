#pragma once
// Reading a project folder from outside the run (a login node, while the job runs or after):
// metrics.jsonl, training_params.json, checkpoints/latest and the exported model, and asking
// Slurm about the job that trains it. Backs `autotrain status` and `autotrain plot`; never
// needs MPI.
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "autotrain/cli/slurm_job.hpp"

namespace autotrain::cli {

// One step line of metrics.jsonl. The first line of a run (step 0) has no training loss.
struct MetricsPoint {
  long long step = 0;
  long long total_steps = 0;
  double epoch = 0;
  std::optional<double> loss;
  std::optional<double> val_loss;
  std::optional<double> lr;
  double tokens_per_s = 0;
  double elapsed_s = 0;  // since the start of the run (process) that wrote the line
};

// One run of the trainer (a process): the first, then one per resume. Its step lines are
// points[first_point, end_point) of the history.
struct RunSegment {
  // The step it started from: its run_start record's, or (a log written before those records)
  // its first logged step.
  long long start_step = 0;
  bool start_recorded = false;  // it has a run_start record
  size_t first_point = 0;
  size_t end_point = 0;
  std::optional<std::string> slurm_job_id;  // from its run_start record, inside Slurm
  // From its run_stop record: the steps done, and "completed" or "preempted" (by `stop_signal`,
  // after saving a checkpoint of stop_step).
  std::optional<long long> stop_step;
  std::string stop_reason;
  std::string stop_signal;
  long long total_steps = 0;  // from its records, for a segment without step lines
};

// What metrics.jsonl holds: step lines (in file order; a resumed run appends and may repeat
// steps it redoes) and the runs that wrote them (metrics.hpp describes the records).
struct MetricsHistory {
  std::vector<MetricsPoint> points;
  std::vector<RunSegment> runs;  // empty only when points is
};

// Every line of `file`. A run starts at its run_start record or, in a log written before those
// records, where the step or the elapsed time goes backwards. Throws Error naming the file when
// it cannot be read; lines that are not metrics lines are skipped with a warning.
MetricsHistory read_metrics(const std::filesystem::path& file);

// The curve to show: one point per step, the last line written for it (a resumed run's redo
// replaces what the interrupted run logged), ascending step.
std::vector<MetricsPoint> latest_per_step(const std::vector<MetricsPoint>& points);

// The steps at which the runs after the first started (resumed), ascending, without repeats.
std::vector<long long> resume_steps(const MetricsHistory& history);

using SlurmQuery = std::function<SlurmJobState(const std::string& job_id)>;

struct ProjectStatus {
  std::filesystem::path project;
  // "not started", "finished" (every step done, model exported), or else what the job is
  // doing: "running", "waiting" (pending, requeued, suspended), "stopped" (Slurm ended the job,
  // or a run outside Slurm recorded its stop) or "unknown" (no job recorded, or Slurm did not
  // answer; `slurm` says why).
  std::string state;
  std::optional<SlurmJobState> slurm;  // asked when the latest run recorded a job id
  long long step = 0;                  // the last logged step
  long long total_steps = 0;
  double epoch = 0;
  std::optional<MetricsPoint> last_loss;  // the latest line with a training loss
  std::optional<MetricsPoint> last_val;   // the latest line with a validation loss
  double tokens_per_s = 0;
  std::optional<double> steps_per_s;           // over the latest run's lines only
  std::optional<double> eta_s;                 // only while running, or "if running" when unknown
  std::optional<double> seconds_since_update;  // age of metrics.jsonl
  std::optional<std::filesystem::path> checkpoint;  // latest, else the newest committed one
  std::optional<long long> checkpoint_step;
  std::optional<RunSegment> latest_run;  // its stop_step says whether and why it stopped
  int restarts = 0;       // runs that appended to metrics.jsonl after the first (resumes)
  bool exported = false;  // model.safetensors present
  // A run outside Slurm: what <project>/.lock says ("host node1 pid 4242") and whether a run
  // holds it now. Held = running; free on this host = the run ended without recording its stop.
  std::string lock_holder;
  bool lock_held = false;
};

// Throws Error when `project` is not a folder or holds neither metrics.jsonl nor
// training_params.json (then it is not a project folder: the message says so). `ask_slurm`
// (query_slurm_job by default) is called with the latest run's job id, when it recorded one.
ProjectStatus read_project_status(const std::filesystem::path& project);
ProjectStatus read_project_status(const std::filesystem::path& project,
                                  const SlurmQuery& ask_slurm);

// A project folder of several models (<project>/sweep.json, written by `train` with num_models
// or a sweep): each model's folder, label ("model 1: lr 3e-4") and status as sweep.json has it.
// nullopt for an ordinary project; throws Error naming the file when it cannot be read.
struct SweepEntry {
  std::filesystem::path folder;
  std::string label;
  std::string status;
};
std::optional<std::vector<SweepEntry>> read_sweep(const std::filesystem::path& project);

std::string render_status(const ProjectStatus& status);
std::string render_status_json(const ProjectStatus& status);

// Training and validation loss against the optimizer step as a self-contained SVG (axes, ticks,
// grid, legend), the learning rate on a second axis at the right, and a dashed vertical line at
// each of `resumes` (steps where a resumed run started). Needs at least one point with a loss;
// throws Error otherwise.
std::string render_loss_svg(const std::vector<MetricsPoint>& curve,
                            const std::vector<long long>& resumes, std::string_view title);

// The models of one allocation (sweep.json): each model's training loss (a line) and validation
// loss (dots) in its own colour, with a legend naming each model and what it changes. Models
// without a loss yet are left out; throws Error when none has one.
struct NamedCurve {
  std::string name;  // "model 1: lr 3e-4"
  std::vector<MetricsPoint> points;
};
std::string render_models_svg(const std::vector<NamedCurve>& curves, std::string_view title);

}  // namespace autotrain::cli
