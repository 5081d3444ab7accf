#pragma once
// The BPE model of Hugging Face's tokenizers (model.type "BPE"), one implementation for every
// family: GPT-2 and Llama 3 / Qwen (byte level) and SentencePiece-style vocabularies (Llama 2,
// Mistral: characters with byte fallback).
//
// A piece (one pre-tokenizer output) starts as one symbol per character (per byte at byte
// level); merges then apply lowest rank first, leftmost first among equal ranks, until none
// applies (a heap over adjacent pairs: O(n log n) in the piece length, as Hugging Face's).
// A character missing from the vocabulary becomes its UTF-8 bytes as <0xNN> tokens with
// byte_fallback, else the unk token (consecutive unks fused into one with fuse_unk), else it is
// dropped, as Hugging Face does. With ignore_merges a piece that is itself in the vocabulary
// is that token.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "autotrain/data/tokenizer.hpp"

namespace autotrain::data {

struct BpeOptions {
  bool byte_level = false;  // spellings are in byte_level's alphabet; pieces are raw bytes
  bool byte_fallback = false;
  bool ignore_merges = false;
  bool fuse_unk = false;
  std::optional<std::string> unk_token;
};

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
};
using TokenMap = std::unordered_map<std::string, TokenId, StringHash, std::equal_to<>>;

class BpeModel {
 public:
  // `vocab`: spelling -> id as in the vocabulary file; `merges`: pairs of spellings, in rank
  // order. `where` prefixes errors ("tokenizer.json: model").
  BpeModel(TokenMap vocab, const std::vector<std::pair<std::string, std::string>>& merges,
           BpeOptions options, const std::string& where);

  // Appends the ids of one piece (raw bytes at byte level, else UTF-8 text).
  void encode(std::string_view piece, std::vector<TokenId>& ids) const;

  // One past the largest id of the vocabulary.
  int size() const { return static_cast<int>(spellings_.size()); }
  // The vocabulary's spelling of `id` ("" for an id no entry has).
  const std::string& spelling(TokenId id) const { return spellings_[static_cast<size_t>(id)]; }
  std::optional<TokenId> find(std::string_view spelling) const;
  const BpeOptions& options() const { return options_; }
  // Whether a vocabulary entry other than `text` itself contains it (if none does, no merge
  // can join `text` to a neighbour).
  bool spelled_within(std::string_view text) const;

 private:
  struct Merge {
    int rank;
    TokenId merged;
  };
  struct Symbol {
    TokenId id;
    int prev;
    int next;
  };
  static uint64_t pair_key(TokenId left, TokenId right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) |
           static_cast<uint32_t>(right);
  }
  const Merge* find_merge(TokenId left, TokenId right) const;
  void initial_symbols(std::string_view piece, std::vector<Symbol>& symbols) const;
  void merge(std::vector<Symbol>& symbols) const;

  BpeOptions options_;
  TokenMap by_spelling_;  // the vocabulary as written
  TokenMap by_piece_;     // the same keyed by what a piece holds (bytes at byte level)
  std::vector<std::string> spellings_;
  std::unordered_map<uint64_t, Merge> merges_;
  std::array<TokenId, 256> byte_ids_{};  // byte level: each byte's token; else <0xNN>, or -1
  TokenId unk_ = -1;
};

}  // namespace autotrain::data
