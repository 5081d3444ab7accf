#include "autotrain/train/resume.hpp"

#include "autotrain/core/error.hpp"
#include "autotrain/core/strings.hpp"
#include "autotrain/train/lora.hpp"
#include "autotrain/train/pretrained.hpp"

namespace autotrain::train {
namespace {

void check_global_batch(const ResumePoint& saved, const RunSetup& setup, const std::string& name) {
  const auto& params = setup.params();
  const long long B = params.batch_size;
  const long long world = setup.topology.world_size;
  const long long global_batch = B * params.gradient_accumulation * world;
  if (saved.global_batch_size == global_batch) return;
  const long long per_step = B * world;
  const std::string fix =
      saved.global_batch_size % per_step == 0
          ? cat("set gradient_accumulation to ", saved.global_batch_size / per_step, " to keep it")
          : cat("no gradient_accumulation gives it with batch_size ", B, " on ", world,
                " rank(s); change batch_size or the number of ranks");
  throw CollectiveError(cat("cannot resume from ", name, ": it was trained with a global batch of ",
                            saved.global_batch_size,
                            " sequences (batch_size x gradient_accumulation x ranks) and this "
                            "run's is ",
                            global_batch, " (", B, " x ", params.gradient_accumulation, " x ",
                            world, "); ", fix));
}

// A fine-tuning run continues from the base weights it started from.
void check_base_weights(const ResumePoint& saved, const RunSetup& setup, const std::string& name) {
  if (saved.base_weights.empty()) return;
  const config::BaseModel& base = setup.resolved.base_model;
  const std::string current = base_weights_hash(base);
  if (current == saved.base_weights) return;
  throw CollectiveError(
      cat("cannot resume from ", name, ": it fine-tunes the base weights ", saved.base_weights,
          ", but base_model ", base.name, " now gives ",
          current.empty() ? base.describe(setup.params().seed)
                          : cat(base.folder.string(), " (", current, ")"),
          "; resume with the same base model, or set resume_from_checkpoint: none to start fresh"));
}

}  // namespace

std::optional<ResumeDecision> plan_resume(const RunSetup& setup, const ckpt::CheckpointDir& dir,
                                          TensorCheck tensors,
                                          std::span<const std::filesystem::path> refused) {
  const auto& params = setup.params();
  const auto path =
      resolve_resume(params.resume_from_checkpoint, dir, setup.comm, tensors, refused);
  if (!path) return std::nullopt;
  const std::string name = path->string();
  ResumeDecision decision{*path, read_resume_point(ckpt::CheckpointReader(*path, setup.comm)), {}};
  const auto problems =
      compatibility_problems(decision.saved, model_config(setup.resolved),
                             engine_options(setup).optimizer.kind, lora_options(setup.params()));
  if (!problems.empty()) {
    throw CollectiveError(cat("cannot resume from ", name, ": its model differs from this run's (",
                              join(problems, "; "),
                              "); train with the checkpoint's settings, or set "
                              "resume_from_checkpoint: none to start fresh"));
  }
  check_base_weights(decision.saved, setup, name);
  check_global_batch(decision.saved, setup, name);
  // After the model and batch checks, which say more about those two.
  decision.changes = check_resume_changes(decision.saved.training_params_json, params,
                                          setup.allow_changed_params, name);
  return decision;
}

}  // namespace autotrain::train
