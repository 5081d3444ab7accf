#include "autotrain/train/resume.hpp"

#include "autotrain/core/error.hpp"
#include "autotrain/core/log.hpp"
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

// A fine-tuning run continues from the base weights it started from. `current`: the base's
// weights_hash when the caller has it. A checkpoint of an earlier version recorded a sampled
// hash: it is compared as such, with a warning that the middle of the files went unchecked.
void check_base_weights(const ResumePoint& saved, const RunSetup& setup, const std::string& name,
                        std::optional<std::string> current) {
  if (saved.base_weights.empty()) return;
  const config::BaseModel& base = setup.resolved.base_model;
  const bool sampled = saved.base_weights.starts_with(kSampledHashPrefix);
  if (sampled) {
    current = base.from_scratch || base.folder.empty() ? std::string()
                                                       : sampled_weights_hash(base.folder);
  } else if (!current) {
    current = base_weights_hash(base, setup.comm);
  }
  if (*current == saved.base_weights) {
    if (sampled && setup.topology.rank == 0) {
      log::warn("resume: ", name, " records a ", kSampledHashPrefix,
                " hash of its base weights (an earlier version's: the files' sizes and first and "
                "last MiB); those match, the rest of the files was not compared");
    }
    return;
  }
  throw CollectiveError(
      cat("cannot resume from ", name, ": it fine-tunes the base weights ", saved.base_weights,
          ", but base_model ", base.name, " now gives ",
          current->empty() ? base.describe(setup.params().seed)
                           : cat(base.folder.string(), " (", *current, ")"),
          "; resume with the same base model, or set resume_from_checkpoint: none to start fresh"));
}

}  // namespace

std::optional<ResumeDecision> plan_resume(const RunSetup& setup, const ckpt::CheckpointDir& dir,
                                          TensorCheck tensors,
                                          std::span<const std::filesystem::path> refused,
                                          const std::optional<std::string>& base_weights) {
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
  check_base_weights(decision.saved, setup, name, base_weights);
  check_global_batch(decision.saved, setup, name);
  // After the model and batch checks, which say more about those two.
  decision.changes = check_resume_changes(decision.saved.training_params_json, params,
                                          setup.allow_changed_params, name);
  if (const OptimizerKind now = engine_options(setup).optimizer.kind;
      now != decision.saved.optimizer) {
    log::info("resume: ", name, " holds ", optimizer_name(decision.saved.optimizer),
              "'s moments as fp32 tensors; ", optimizer_name(now),
              now == OptimizerKind::adamw_8bit ? " requantizes them to 8 bits, block by block"
                                               : " continues from them (dequantized 8-bit values)");
  }
  return decision;
}

}  // namespace autotrain::train
