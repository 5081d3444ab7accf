#pragma once
// The tokenizer of a tokenizer.json (and of GPT-2's own files, which are the same pipeline):
//   text -> added tokens split out -> normalizer -> pre-tokenizer -> BPE per piece,
// and for decoding: ids -> spellings -> decoder. Built by tokenizer_files.cpp.
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "added_tokens.hpp"
#include "autotrain/data/tokenizer.hpp"
#include "bpe.hpp"
#include "decoder.hpp"
#include "normalizer.hpp"
#include "pre_tokenizer.hpp"

namespace autotrain::data {

struct TokenizerParts {
  std::string name;
  std::vector<std::filesystem::path> files;
  std::unique_ptr<Normalizer> normalizer;       // may be null
  std::unique_ptr<PreTokenizer> pre_tokenizer;  // may be null
  std::unique_ptr<BpeModel> model;
  std::unique_ptr<Decoder> decoder;  // may be null
  std::vector<AddedToken> added_tokens;
  DocumentFrame template_frame;  // the post-processor's single template around $A
  TokenId eot = -1;              // end-of-text: the eos token
  std::optional<TokenId> pad;    // tokenizer_config.json's pad_token
  std::vector<TokenId> stop_tokens;
  bool eot_before_documents = false;  // llm.c's layout (the built-in gpt2)
  ChatSettings chat;
  bool parse_special_tokens = true;
};

std::unique_ptr<Tokenizer> make_pipeline_tokenizer(TokenizerParts parts);

}  // namespace autotrain::data
