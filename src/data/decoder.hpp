#pragma once
// Decoders of tokenizer.json ("decoder"): ByteLevel, Replace, ByteFallback, Fuse, Strip,
// Metaspace and Sequence. As in Hugging Face's tokenizers, a decoder turns the list of token
// spellings into a list of strings (decode_chain); decoding concatenates the final list.
#include <memory>
#include <string>
#include <vector>

#include "tokenizer_json.hpp"

namespace autotrain::data {

class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual void decode_chain(std::vector<std::string>& tokens) const = 0;
};

// nullptr for a null decoder (decoding then joins the spellings with spaces, as Hugging Face).
std::unique_ptr<Decoder> make_decoder(const tokenizer_json::Json& json, const std::string& where);
// GPT-2's own files: ByteLevel, giving the bytes back as they are (valid UTF-8 or not).
std::unique_ptr<Decoder> make_gpt2_decoder();

// Invalid UTF-8 sequences replaced by U+FFFD, as Rust's String::from_utf8_lossy.
std::string utf8_lossy(std::string_view bytes);

}  // namespace autotrain::data
