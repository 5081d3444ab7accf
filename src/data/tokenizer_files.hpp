#pragma once
// Loading tokenizers from their files into the shared pipeline (pipeline_tokenizer.hpp).
#include <filesystem>
#include <memory>

#include "autotrain/data/tokenizer.hpp"

namespace autotrain::data {

// A Hugging Face tokenizer.json, with tokenizer_config.json and generation_config.json from
// the same folder when they exist.
std::unique_ptr<Tokenizer> load_tokenizer_json(const std::filesystem::path& file,
                                               const TokenizerOptions& options);
// GPT-2's encoder.json + vocab.bpe in `dir`.
std::unique_ptr<Tokenizer> load_gpt2_tokenizer(const std::filesystem::path& dir,
                                               const TokenizerOptions& options);

}  // namespace autotrain::data
