#pragma once
// The models one allocation trains at once (num_models, the YAML's sweep block) and what each
// changes. A sweep varies training parameters only, in one of two forms:
//
//   sweep: {lr: [1e-4, 3e-4], seed: [1, 2]}                   # grid: every combination, 4 models
//   sweep: {mode: list, runs: [{lr: 1e-4}, {lr: 3e-4, base_model: ...}]}   # list: 2 models
//
// Grid models are numbered in written order with the last key varying fastest. Without a sweep,
// num_models K > 1 trains K models that differ in their seed only (model k: seed + k).
#include <string>
#include <vector>

#include "autotrain/config/load.hpp"

namespace autotrain::config {

struct ModelPlan {
  // What model k changes, applied after the command-line flags (load_params'
  // ConfigInputs::model_changes); `spelling` says where each value came from
  // ("configs/x.yaml:sweep.lr").
  std::vector<FlagValue> changes;
};

struct ModelsPlan {
  std::vector<ModelPlan> models;  // one entry (no changes) for an ordinary run
  bool grouped = false;           // a sweep or num_models > 1: outputs in <project_name>/model-<k>/
  std::string source;             // "configs/x.yaml:sweep", "num_models", or "" when not grouped
  TrainingParams base;            // the parameters before any model's changes (not resolved)
};

// Reads num_models and the sweep from `inputs` (defaults, training_params.json, YAML, flags) and
// checks every model's values against the parameter table. Throws Error naming the file and key:
// a sweep key that is not a training parameter (num_models, project_name, the world layout), is
// also given as a flag, or has no values; num_models that disagrees with the sweep's size.
ModelsPlan plan_models(const ConfigInputs& inputs);

// "lr 0.0003, seed 2" (what a model changes, for tables and sweep.json); "-" for none.
std::string describe_changes(const ModelPlan& model);

}  // namespace autotrain::config
