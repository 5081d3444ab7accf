#pragma once
// Sampling text from an exported model folder (model.safetensors + config.json + tokenizer
// files, as export.hpp writes them, or a Hugging Face GPT-2 folder).
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "autotrain/data/tokenizer.hpp"
#include "autotrain/model/gpt2.hpp"
#include "autotrain/model/param_layout.hpp"

namespace autotrain::train {

struct LoadedModel {
  std::unique_ptr<model::ParamLayout> layout;
  std::vector<float> params;  // the flat buffer, padded vocabulary rows zero
  std::unique_ptr<data::Tokenizer> tokenizer;
};

// Reads config.json (GPT-2 fields), model.safetensors (every tensor present with its shape,
// in fp32, bf16 or fp16) and the tokenizer. Errors name the file and the tensor or key.
LoadedModel load_model_folder(const std::filesystem::path& dir);

struct GenerateOptions {
  std::string prompt;
  int max_new_tokens = 100;
  double temperature = 1.0;  // 0 = greedy
  int top_k = 50;            // 0 = the whole vocabulary
  std::uint64_t seed = 42;
};

// The generated continuation only (the prompt excluded); stops at the end-of-text token.
std::string generate_text(const LoadedModel& loaded, const GenerateOptions& options);

}  // namespace autotrain::train
