#pragma once
// LoRA in a run (`peft: true`, docs/training.md "LoRA"): the frozen base model and its adapters
// (model/lora.hpp). The adapters' layout is the run's trainable layout: the optimizer,
// checkpoints and resume see only it. The base weights stay fp32 and unchanged; the ZeRO engine
// holds them as its stage holds parameters (zero::Engine::hold_frozen: whole on every rank under
// stages 0-2, each rank's shard of `frozen` under stage 3, gathered a unit at a time), and the
// CPU replica runs the model over them through model::LoraAccess.
#include <memory>
#include <optional>

#include "autotrain/model/lora.hpp"
#include "autotrain/model/param_layout.hpp"
#include "autotrain/model/param_source.hpp"
#include "autotrain/model/quantized_layout.hpp"
#include "autotrain/train/run_setup.hpp"

namespace autotrain::train {

// The LoRA options of `params` (lora_r, lora_alpha, target_modules: null or empty =
// all-linear); nullopt without peft.
std::optional<model::LoraOptions> lora_options(const config::TrainingParams& params);
// The frozen weights' quantization of `params` (quantization int4|int8 with peft,
// bnb_4bit_use_double_quant); nullopt for none or without peft.
std::optional<model::QuantOptions> quant_options(const config::TrainingParams& params);

struct LoraModel {
  model::LoraOptions options;
  model::ParamLayout base;      // the frozen model's layout, whole (world size 1): the model's
  model::ParamLayout frozen;    // the same padded for the world: what the engine holds (ZeRO-3:
                                // rank r the r-th part of every unit)
  model::ParamLayout adapters;  // the trainable layout, padded for the world
  model::LoraAdapters lora;
  std::unique_ptr<model::ParamSource> weights;  // the base's: pretrained, or from the seed
  // QLoRA (`quantization: int4|int8`): the frozen blocks' weights in 4 or 8 bits.
  std::optional<model::QuantOptions> quantization;
  // adapter_config.json's base_model_name_or_path (config::peft_base_name): the Hub id when the
  // base came by Hub id; "" = the folder export_adapter is given.
  std::string base_model_name;

  // Layouts only (weights null): for the dry run, export and checkpoints.
  LoraModel(const model::ModelConfig& config, const model::LoraOptions& options, int world_size);
  // *weights; an Error when they are not open (a LoraModel of layouts only).
  const model::ParamSource& base_weights() const;
};

// The run's LoRA model, its base weights opened (collective: open_base_weights); null without
// peft.
std::unique_ptr<LoraModel> open_lora_model(const RunSetup& setup);

// The plan's line: rank, scale, the adapted weights, trainable parameters against the model's,
// and the frozen weights' memory per rank (`frozen_bytes`: Replica::frozen_bytes(), under
// ZeRO-3 the shard and the gather slots) against the whole base.
void log_lora_plan(const LoraModel& lora, std::size_t frozen_bytes);

// The layout the run trains: the adapters' with LoRA, else the model's padded for the world.
model::ParamLayout trainable_layout(const RunSetup& setup, const LoraModel* lora);

}  // namespace autotrain::train
