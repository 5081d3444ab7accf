#pragma once
// Which checkpoint a run continues from, and whether it may (docs/training.md, "Resuming"):
// shared by the trainer and `train --dry-run`, so the plan refuses exactly what training would.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "autotrain/ckpt/checkpoint_dir.hpp"
#include "autotrain/train/checkpointing.hpp"
#include "autotrain/train/param_changes.hpp"
#include "autotrain/train/run_setup.hpp"

namespace autotrain::train {

struct ResumeDecision {
  std::filesystem::path path;
  ResumePoint saved;
  std::vector<ParamChange> changes;  // the parameters this run changes, as the policy allows
};

// Collective over MPI_COMM_WORLD. The checkpoint resume_from_checkpoint names (auto: the one
// `latest` names, then the others in commit order, each verified, those in `refused` left
// out), with its run state checked against this run: the same model shape and optimizer, the
// same global batch, and only the parameter changes the policy allows. nullopt: a fresh
// start. A checkpoint this run cannot continue from is a CollectiveError that says what
// differs and how to fix it. `tensors`: see resolve_resume (the trainer verifies at load).
// `base_weights`: the base model's base_weights_hash when the caller has it (it reads every byte
// of the weights), else it is computed when a checkpoint records one.
std::optional<ResumeDecision> plan_resume(
    const RunSetup& setup, const ckpt::CheckpointDir& dir,
    TensorCheck tensors = TensorCheck::whole_read,
    std::span<const std::filesystem::path> refused = {},
    const std::optional<std::string>& base_weights = std::nullopt);

}  // namespace autotrain::train
