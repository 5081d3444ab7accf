#pragma once
// Reading a project folder from outside the run (a login node, while the job runs or after):
// metrics.jsonl, training_params.json, checkpoints/latest and the exported model. Backs
// `autotrain status` and `autotrain plot`; never needs MPI.
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace autotrain::cli {

// One line of metrics.jsonl. The first line of a run (step 0) has no training loss.
struct MetricsPoint {
  long long step = 0;
  long long total_steps = 0;
  double epoch = 0;
  std::optional<double> loss;
  std::optional<double> val_loss;
  double lr = 0;
  double tokens_per_s = 0;
  double elapsed_s = 0;  // since the start of the run (process) that wrote the line
};

// Every line of `file`, in file order (a resumed run appends and may repeat steps it redoes).
// Throws Error naming the file and line of a line that is not a metrics object.
std::vector<MetricsPoint> read_metrics(const std::filesystem::path& file);

// The curve to show: one point per step, the last line written for it (a resumed run's redo
// replaces what the interrupted run logged), ascending step.
std::vector<MetricsPoint> latest_per_step(const std::vector<MetricsPoint>& points);

struct ProjectStatus {
  std::filesystem::path project;
  std::string state;  // "not started", "running or stopped", "finished"
  long long step = 0;
  long long total_steps = 0;
  double epoch = 0;
  std::optional<MetricsPoint> last_loss;  // the latest line with a training loss
  std::optional<MetricsPoint> last_val;   // the latest line with a validation loss
  double tokens_per_s = 0;
  std::optional<double> steps_per_s;  // over the latest run's lines
  std::optional<double> eta_s;
  std::optional<double> seconds_since_update;       // age of metrics.jsonl
  std::optional<std::filesystem::path> checkpoint;  // what checkpoints/latest names
  std::optional<long long> checkpoint_step;
  int restarts = 0;       // runs that appended to metrics.jsonl after the first (resumes)
  bool exported = false;  // model.safetensors present
};

// Throws Error when `project` is not a folder or holds neither metrics.jsonl nor
// training_params.json (then it is not a project folder: the message says so).
ProjectStatus read_project_status(const std::filesystem::path& project);

std::string render_status(const ProjectStatus& status);
std::string render_status_json(const ProjectStatus& status);

// Training and validation loss against the optimizer step as a self-contained SVG (axes, ticks,
// grid, legend). Needs at least one point with a loss; throws Error otherwise.
std::string render_loss_svg(const std::vector<MetricsPoint>& curve, std::string_view title);

}  // namespace autotrain::cli
