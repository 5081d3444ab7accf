#pragma once
// Tokenizers: text <-> token ids. Two kinds, one interface:
//   "gpt2"  GPT-2's byte-level BPE (vocab 50257, <|endoftext|> = 50256), loaded from
//           encoder.json + vocab.bpe; exact against the reference encoder.
//   "byte"  one token per UTF-8 byte (vocab 256); the end-of-text token is byte 0 (NUL), which
//           does not occur in text, so decode(encode(text)) == text for any text without NUL.
// encode() never produces the end-of-text token from text: "<|endoftext|>" written in a
// document is encoded as ordinary characters. The end-of-text token is added only between
// documents, by `prepare` (docs/data.md). Every method is const and safe to call from many
// threads at once.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace autotrain::data {

using TokenId = int32_t;

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  virtual std::string name() const = 0;
  virtual std::vector<TokenId> encode(std::string_view text) const = 0;
  // Appends to `ids` (lets callers reuse one buffer across documents).
  virtual void encode_append(std::string_view text, std::vector<TokenId>& ids) const = 0;
  // Throws Error on an id outside [0, vocab_size()).
  virtual std::string decode(const std::vector<TokenId>& ids) const = 0;
  virtual int vocab_size() const = 0;
  virtual TokenId eot_token() const = 0;
  // Files the vocabulary was loaded from (empty for "byte"); prepare hashes them.
  virtual std::vector<std::filesystem::path> vocabulary_files() const = 0;
};

// "gpt2" (vocabulary from `gpt2_dir`, default data_dir()/gpt2) or "byte". Unknown names are an
// Error that lists the known ones.
std::unique_ptr<Tokenizer> make_tokenizer(std::string_view name,
                                          const std::filesystem::path& gpt2_dir = {});
std::vector<std::string> tokenizer_names();

}  // namespace autotrain::data
