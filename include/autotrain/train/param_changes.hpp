#pragma once
// What a resumed run may change (docs/training.md, "Resuming"). The checkpoint holds the
// resolved parameters of the run that wrote it; the resumed run's are compared with them:
// - free: how long and how the run goes on (max_steps, epochs, logging and evaluation, checkpoint
//   cadence and layout, ranks, ZeRO stage, device, precision, threads, batch split), no flag;
// - refused, naming the old and new values: what the saved state depends on (seed, which sets
//   the data order; the data and its tokenizer; block_size; the model's shape; the optimizer);
// - with --allow-changed-params only: the optimisation (lr, scheduler, warmup, weight decay,
//   clipping), which would make the steps after the resume differ from the ones before.
// Every change that is made is recorded in <project>/param_changes.jsonl, one line per resume
// with the step it takes effect at; nothing earlier is rewritten.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "autotrain/config/training_params.hpp"

namespace autotrain::train {

struct ParamChange {
  std::string name;
  nlohmann::json before;
  nlohmann::json after;
};

// The parameters that differ between `saved_json` (a checkpoint's training_params) and
// `params`; throws a CollectiveError naming every refused change (and, without
// `allow_changed`, every change that needs --allow-changed-params) with its two values.
std::vector<ParamChange> check_resume_changes(const std::string& saved_json,
                                              const config::TrainingParams& params,
                                              bool allow_changed, const std::string& checkpoint);

// Appends {"step": step, "checkpoint": ..., "changes": {name: [before, after], ...}} to
// <project>/param_changes.jsonl (rank 0). Nothing when `changes` is empty.
void record_param_changes(const std::filesystem::path& project, long long step,
                          const std::string& checkpoint, const std::vector<ParamChange>& changes);

}  // namespace autotrain::train
