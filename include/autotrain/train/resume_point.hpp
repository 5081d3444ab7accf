#pragma once
// The run state a checkpoint records besides its tensors, and its parser (checkpointing.hpp
// reads it from a checkpoint file). Its own file so that what parses it needs only the layers
// below train (tests/fuzz/run_state_fuzz.cpp).
#include <optional>
#include <string>

#include "autotrain/ckpt/checkpoint.hpp"
#include "autotrain/data/sampler.hpp"
#include "autotrain/model/config.hpp"
#include "autotrain/model/lora.hpp"
#include "autotrain/optim/optimizer.hpp"
#include "autotrain/train/loss_scaler.hpp"

namespace autotrain::train {

// The run state a checkpoint records besides its tensors (run_state/json/* and the root
// attributes).
struct ResumePoint {
  long long step = 0;               // optimizer steps done
  data::SamplerPosition position;   // where the data order continues
  long long global_batch_size = 0;  // G of the run that wrote it
  long long total_steps = 0;        // the learning-rate schedule's total
  long long optimizer_steps = 0;    // AdamW's bias-correction count
  int world_size = 0;               // of the run that wrote it
  int zero_stage = 0;
  model::ModelConfig model;
  OptimizerKind optimizer = OptimizerKind::adamw;
  std::string training_params_json;  // the resolved parameters of the run that wrote it
  LossScalerState loss_scaler;       // fp16's; older checkpoints have none: the defaults
  // weights_hash of the base model the run started from; "" from scratch (and in checkpoints
  // older than base models).
  std::string base_weights;
  std::string base_folder;  // where they were read from (for export's config.json)
  // With peft: the adapters the checkpoint's tensors are (model/<p> are lora_A/lora_B).
  std::optional<model::LoraOptions> lora;
};

// The run state from a checkpoint's root attributes and run_state/json documents; `where`
// names the checkpoint in messages. Throws Error naming the checkpoint and the key when a
// document is missing or malformed, CollectiveError when the values describe no possible run.
ResumePoint parse_resume_point(const ckpt::CheckpointInfo& info, const std::string& where);

}  // namespace autotrain::train
