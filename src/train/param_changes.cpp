#include "autotrain/train/param_changes.hpp"

#include <algorithm>
#include <fstream>
#include <span>
#include <string_view>

#include "autotrain/config/load.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/strings.hpp"
#include "autotrain/optim/optimizer.hpp"

namespace autotrain::train {
namespace {

using json = nlohmann::json;

// What the saved state depends on: changing it would continue another run than the saved one.
// (The optimizer: see optimizer_change.)
constexpr std::string_view kRefused[] = {
    "seed",          "data_path",     "train_split",
    "text_column",   "chat_template", "train_on_completions_only",
    "add_eos_token", "tokenizer",     "parse_special_tokens",
    "block_size",    "model",         "from_scratch",
    "n_layer",       "n_head",        "n_embd",
    "n_positions",   "vocab_size"};

// The optimisation itself (and what a QLoRA run's adapters train against): allowed, but only
// when asked for.
constexpr std::string_view kNeedsFlag[] = {"lr",           "scheduler",
                                           "min_lr_rate",  "lr_scheduler_kwargs",
                                           "warmup_ratio", "warmup_steps",
                                           "warmup_type",  "weight_decay",
                                           "adam_beta1",   "adam_beta2",
                                           "adam_epsilon", "max_grad_norm",
                                           "quantization", "bnb_4bit_use_double_quant"};

bool listed(std::string_view name, std::span<const std::string_view> list) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

// A change of optimizer between names of one optimizer (paged_adamw_8bit -> adamw_8bit) is no
// change to the run; between AdamW's 32-bit and 8-bit moments (the same logical state: the
// checkpoint's fp32 m and v are requantized, or the 8-bit ones loaded as fp32) it changes how the
// run optimises; to or from SGD the saved state is another optimizer's.
enum class OptimizerChange { same, optimisation, refused };

OptimizerChange optimizer_change(const json& before, const json& after) {
  if (!before.is_string() || !after.is_string()) return OptimizerChange::refused;
  try {
    const OptimizerKind saved = parse_optimizer(before.get<std::string>(), "optimizer");
    const OptimizerKind now = parse_optimizer(after.get<std::string>(), "optimizer");
    if (saved == now) return OptimizerChange::same;
    return same_optimizer_state(saved, now) ? OptimizerChange::optimisation
                                            : OptimizerChange::refused;
  } catch (const Error&) {
    return OptimizerChange::refused;
  }
}

std::string describe(const std::vector<ParamChange>& changes) {
  std::vector<std::string> parts;
  for (const auto& change : changes) {
    parts.push_back(cat(change.name, " ", change.before.dump(), " -> ", change.after.dump()));
  }
  return join(parts, ", ");
}

}  // namespace

std::vector<ParamChange> check_resume_changes(const std::string& saved_json,
                                              const config::TrainingParams& params,
                                              bool allow_changed, const std::string& checkpoint) {
  json saved;
  try {
    saved = json::parse(saved_json);
  } catch (const json::exception& error) {
    throw CollectiveError(cat("cannot resume from ", checkpoint,
                              ": its run_state/json/training_params is not JSON (", error.what(),
                              ")"));
  }
  const json now = json::parse(config::to_json(params).dump());
  std::vector<ParamChange> changes, refused, flagged;
  for (const auto& [name, value] : now.items()) {
    // A parameter an older autotrain did not know is not a change.
    if (!saved.is_object() || !saved.contains(name) || saved[name] == value) continue;
    ParamChange change{name, saved[name], value};
    if (listed(name, kRefused)) refused.push_back(change);
    if (listed(name, kNeedsFlag)) flagged.push_back(change);
    if (name == "optimizer") {
      const OptimizerChange kind = optimizer_change(change.before, change.after);
      if (kind == OptimizerChange::refused) refused.push_back(change);
      if (kind == OptimizerChange::optimisation) flagged.push_back(change);
    }
    changes.push_back(std::move(change));
  }
  if (!refused.empty()) {
    throw CollectiveError(
        cat("cannot resume from ", checkpoint, ": ", describe(refused),
            " would continue a different run (the data order, the data or the model the saved "
            "state belongs to); keep the checkpoint's values, or start fresh with "
            "resume_from_checkpoint: none or another project_name"));
  }
  if (!flagged.empty() && !allow_changed) {
    throw CollectiveError(cat("cannot resume from ", checkpoint, ": ", describe(flagged),
                              " changes how the run optimises from here on; keep the "
                              "checkpoint's values, or pass --allow-changed-params to make the "
                              "change (it is recorded in param_changes.jsonl)"));
  }
  return changes;
}

void record_param_changes(const std::filesystem::path& project, long long step,
                          const std::string& checkpoint, const std::vector<ParamChange>& changes) {
  if (changes.empty()) return;
  json line;
  line["step"] = step;
  line["checkpoint"] = checkpoint;
  json& changed = line["changes"];
  for (const auto& change : changes)
    changed[change.name] = json::array({change.before, change.after});
  const std::filesystem::path path = project / "param_changes.jsonl";
  std::ofstream out(path, std::ios::app);
  out << line.dump() << "\n";
  out.flush();
  AT_CHECK(out.good(), "cannot append to ", path.string());
}

}  // namespace autotrain::train
