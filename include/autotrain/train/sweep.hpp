#pragma once
// What the models of one allocation did (model_group.hpp): each model's result in
// <project_name>/model-<k>/result.json (written by the model's first rank when it ends), and
// <project_name>/sweep.json, the table of every model (written by the job's rank 0 at the start
// and when every model is done). A model that finished or failed keeps that state when the job
// is requeued; delete its result.json to train it again.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "autotrain/config/sweep.hpp"

namespace autotrain::train {

struct ModelResult {
  int model = 0;
  std::string status = "running";  // running | finished | failed | preempted
  long long steps = 0;
  std::optional<double> final_loss;
  std::optional<double> final_val_loss;
  double tokens_per_s = 0;
  std::string error;  // why it failed
};

std::filesystem::path model_dir(const std::filesystem::path& project, int model);

// Absent or unreadable: nullopt (the model has not ended).
std::optional<ModelResult> read_model_result(const std::filesystem::path& dir);
void write_model_result(const std::filesystem::path& dir, const ModelResult& result);

// Every model's row: its result.json where it has one, else `running`.
std::vector<ModelResult> collect_results(const std::filesystem::path& project, int models);

// sweep.json: for each model its folder, ranks, changes, status, steps and losses.
void write_sweep_json(const std::filesystem::path& project, const config::ModelsPlan& plan,
                      int ranks_per_model, const std::vector<ModelResult>& results);

// The end-of-run lines: the models ranked by validation loss (then train loss); failed ones last.
std::vector<std::string> rank_models(const config::ModelsPlan& plan,
                                     const std::vector<ModelResult>& results);

}  // namespace autotrain::train
