#pragma once
// Sampling text from an exported model folder (model.safetensors + config.json + tokenizer
// files, as export.hpp writes them, or a Hugging Face folder of a GPT-2 or Llama-family model).
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "autotrain/data/tokenizer.hpp"
#include "autotrain/model/config.hpp"
#include "autotrain/model/param_layout.hpp"
#include "autotrain/model/quantized_layout.hpp"
#include "autotrain/train/model_folder_config.hpp"
#include "autotrain/train/run_setup.hpp"

namespace autotrain::train {

struct LoadedModel {
  std::unique_ptr<model::ParamLayout> layout;
  std::vector<float> params;  // the flat buffer, padded vocabulary rows zero
  std::unique_ptr<data::Tokenizer> tokenizer;
};

// The head a folder's model must have: a language model's (generate, and an adapter folder's
// base), or a score head (a reward model: *ForSequenceClassification, autotrain score).
enum class FolderHead { language_model, score };

// Reads config.json, the weights (PretrainedWeights: model.safetensors or a
// sharded set, fp32, bf16 or fp16) and the tokenizer. Errors name the file and the tensor or key,
// and a folder whose model has the other head than `head` says what it is for. With
// `quantization` the (base) model's block weights are quantized and dequantized as a QLoRA run
// holds them, before an adapter folder's adapters are merged.
LoadedModel load_model_folder(const std::filesystem::path& dir,
                              FolderHead head = FolderHead::language_model,
                              std::optional<model::QuantOptions> quantization = std::nullopt);

struct GenerateOptions {
  std::string prompt;
  int max_new_tokens = 100;
  double temperature = 1.0;  // 0 = greedy
  int top_k = 50;            // 0 = the whole vocabulary
  std::uint64_t seed = 42;
  // The tokenizer's prefix (Llama 2's <s>) before the prompt, as a document starts; false for a
  // prompt a chat template rendered, which writes its own (apply_chat_template's tokens).
  bool document_prefix = true;
  std::vector<std::int32_t> stop_tokens;  // beside the tokenizer's: a chat template's turn end
  // Where the model runs (resolved, as choose_generate_device returns it) and, on the GPU, its
  // compute precision. The sampling above is the same code on both devices.
  Device device = Device::cpu;
  Precision precision = Precision::fp32;
};

struct Generated {
  std::string text;             // the continuation only (the prompt excluded)
  int new_tokens = 0;           // tokens in `text`
  bool stopped_at_end = false;  // the model produced one of the stop tokens
};

// Samples a continuation of options.prompt; stops at any of the tokenizer's stop tokens (the
// end-of-text token, generation_config.json's eos ids) and options.stop_tokens, or after
// max_new_tokens. Each new token
// runs one position through the model with a key/value cache, on the CPU and on a GPU. When the
// window reaches n_positions it restarts from the last half of it, on both devices.
Generated generate(const LoadedModel& loaded, const GenerateOptions& options);
// generate(...).text
std::string generate_text(const LoadedModel& loaded, const GenerateOptions& options);

// `--device auto|cpu|cuda` and `--mixed-precision no|bf16|fp16` resolved: auto is the first
// visible GPU when the build has CUDA and one is visible, else the CPU; cuda without one is an
// Error saying why. The CPU computes in fp32 whatever was asked. `summary` is the one line that
// says where generation runs and in which precision.
struct GenerateDevice {
  Device device = Device::cpu;
  Precision precision = Precision::fp32;
  std::string summary;
};
GenerateDevice choose_generate_device(const std::string& device,
                                      const std::string& mixed_precision);

}  // namespace autotrain::train
