#pragma once
// PEFT's adapter folder, as PeftModel.from_pretrained reads it: adapter_config.json (a LoraConfig:
// peft_type LORA, r, lora_alpha, target_modules, fan_in_fan_out, base_model_name_or_path, ...)
// and adapter_model.safetensors (the adapters under PEFT's names, model/lora.hpp). `export`
// writes one for a peft run; `generate` and the tests read one back onto its base model.
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "autotrain/model/lora.hpp"
#include "autotrain/model/param_layout.hpp"
#include "autotrain/train/lora.hpp"

namespace autotrain::train {

inline constexpr const char* kAdapterConfig = "adapter_config.json";
inline constexpr const char* kAdapterWeights = "adapter_model.safetensors";

bool is_adapter_folder(const std::filesystem::path& dir);

struct AdapterConfig {
  model::LoraOptions options;
  std::string base_model;  // base_model_name_or_path: a folder or a Hub id; "" when null
};

// adapter_config.json of `dir`. An Error naming the file and the key for anything autotrain's
// LoRA does not compute (another peft_type, use_rslora, use_dora, a bias, modules_to_save,
// rank or alpha patterns).
AdapterConfig read_adapter_config(const std::filesystem::path& dir);

// The adapter_config.json export writes for `lora`.
std::string adapter_config_json(const LoraModel& lora, const std::string& base_model);

// adapter_model.safetensors of `dir` into the flat buffer of `adapters` (an adapters' layout of
// world size 1): every tensor present with its shape, no other; Errors name the file and tensor.
std::vector<float> read_adapter_weights(const std::filesystem::path& dir,
                                        const model::ParamLayout& adapters);

// The tokenizer autotrain_tokenizer.json in `dir` names (autotrain's exports of its gpt2 and byte
// tokenizers write it; an adapter folder has no config.json to say so), or "" without the file.
std::string autotrain_tokenizer_name(const std::filesystem::path& dir);

// base += lora_alpha / r · B · A for every adapted weight: `adapters` the flat buffer of
// lora.adapters (as read_adapter_weights returns it), `base` that of lora.base.
void merge_adapters(const LoraModel& lora, std::span<const float> adapters, std::span<float> base);

}  // namespace autotrain::train
