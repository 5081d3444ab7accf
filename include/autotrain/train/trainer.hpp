#pragma once
// The training loop: prepares the data (once, into the project folder), builds the model and the
// ZeRO engine, runs optimizer steps over the world-size-independent data order, evaluates,
// logs, saves checkpoints (every checkpoint_every steps, at the end, and on a stop signal),
// resumes from one (resume_from_checkpoint), and exports a Hugging Face model folder at the end.
#include <filesystem>
#include <optional>

#include "autotrain/train/run_setup.hpp"

namespace autotrain::train {

struct TrainSummary {
  long long steps = 0;  // optimizer steps done in total (including before a resume)
  long long steps_this_run = 0;
  double wall_s = 0;
  double tokens = 0;  // tokens trained on in this run (all ranks)
  double tokens_per_s = 0;
  double final_loss = 0;
  std::optional<double> final_val_loss;
  std::filesystem::path export_dir;  // empty when nothing was exported
  // A stop signal (signals.hpp) ended the run early: a checkpoint of the last step was saved,
  // nothing was exported, and `train` exits with kExitPreempted.
  bool preempted = false;
  int stop_signal = 0;
  std::filesystem::path resumed_from;  // empty when the run started fresh
};

// Collective over setup.comm (the job, or one model's group). Throws Error on bad data or I/O
// failures.
TrainSummary run_training(const RunSetup& setup);

}  // namespace autotrain::train
