#pragma once
// A model folder's config.json (generate and export read model folders; generate.hpp). Its own
// file so that what parses it needs only the model layer (tests/fuzz/model_config_fuzz.cpp).
#include <filesystem>
#include <string>

#include "autotrain/model/config.hpp"

namespace autotrain::train {

// A model folder's config.json: the model it describes (model::read_hf_config: GPT-2 or the
// Llama family; an Error naming the file and key otherwise) and the tokenizer an autotrain
// export names (autotrain_tokenizer; "gpt2" when absent).
struct ModelFolderConfig {
  model::ModelConfig shape;
  std::string tokenizer;
};
ModelFolderConfig read_model_config(const std::filesystem::path& dir);

}  // namespace autotrain::train
