#pragma once
// Export to a Hugging Face model folder that transformers loads as the model's architecture
// (GPT2LMHeadModel, LlamaForCausalLM, ...): model.safetensors (Hugging Face names, padded
// vocabulary rows stripped;
// above max_shard_size, shards with model.safetensors.index.json as save_pretrained writes),
// config.json, and the tokenizer files (for gpt2 vocab.json + merges.txt, plus encoder.json +
// vocab.bpe so `autotrain generate` reads the same folder; for a tokenizer.json, copies of it
// and of the tokenizer_config.json / generation_config.json beside it). Units are streamed to rank
// 0 one at a time (zero::ModelState::gather_unit), so no rank ever holds the whole model under
// ZeRO-3.
#include <filesystem>
#include <span>
#include <string>

#include "autotrain/config/training_params.hpp"
#include "autotrain/core/dtype.hpp"
#include "autotrain/model/param_layout.hpp"
#include "autotrain/train/lora.hpp"
#include "autotrain/zero/engine.hpp"

namespace autotrain::train {

// Collective. Writes into `dir` (created if needed); the dtype is params.export_dtype. With a
// `base_folder` (the base model's), config.json keeps every field of the base model's
// (with this model's shape and torch_dtype), and its generation_config.json is copied.
void export_model(zero::ModelState& engine, const model::ParamLayout& layout,
                  const config::TrainingParams& params, const std::filesystem::path& dir,
                  const std::filesystem::path& base_folder = {});

// Not collective: export_model's folder for a model whose whole flat buffer `values` (of
// `layout`, world size 1) this process holds (`autotrain tools merge-llm-adapter`). Returns the
// weight files' summary.
std::string export_model_values(const model::ParamLayout& layout, std::span<const float> values,
                                const config::TrainingParams& params,
                                const std::filesystem::path& dir,
                                const std::filesystem::path& base_folder);

// With peft (train/lora.hpp), collective: a PEFT adapter folder (adapter_model.safetensors,
// adapter_config.json naming base_folder, the tokenizer files) in `dir`.
void export_adapter(zero::ModelState& engine, const LoraModel& lora,
                    const config::TrainingParams& params, const std::filesystem::path& dir,
                    const std::filesystem::path& base_folder);
// export_adapter into `dir`, or with params.merge_adapter the merged model (the base weights from
// lora.weights plus the adapters' product, as export_model writes a model) into `dir` and the
// adapter folder into `dir`/adapter.
void export_lora(zero::ModelState& engine, const LoraModel& lora,
                 const config::TrainingParams& params, const std::filesystem::path& dir,
                 const std::filesystem::path& base_folder);

// What the summary names for a run's export into `dir` (export_model, or export_lora with
// `peft`): "<dir> (model.safetensors, config.json)", the shards and their index for a sharded
// model, "<dir> (adapter_model.safetensors, adapter_config.json)" for an adapter folder, and with
// `merge_adapter` the merged model's files then the adapter folder's.
std::string describe_export(const std::filesystem::path& dir, bool peft, bool merge_adapter);

// config.json for the model's family with this shape (model::hf_config: a score head's model is
// the family's *ForSequenceClassification with one label); `eos_token_id` is the tokenizer's
// end-of-text token (also written as bos_token_id, as GPT-2's own config does). With a score
// head, pad_token_id too (by which transformers finds each row's last token): the tokenizer's
// pad token, else its end-of-text token; a base model's own non-null pad_token_id is kept.
std::string hf_config_json(const model::ModelConfig& config, const std::string& tokenizer,
                           int eos_token_id, int pad_token_id, DType dtype);

}  // namespace autotrain::train
