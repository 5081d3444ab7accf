#pragma once
// Tokenizers: text <-> token ids. One interface, three kinds (docs/data.md):
//   "gpt2"  GPT-2's byte-level BPE (vocab 50257, <|endoftext|> = 50256) from encoder.json +
//           vocab.bpe;
//   "byte"  one token per UTF-8 byte (vocab 256); the end-of-text token is byte 0 (NUL);
//   a Hugging Face tokenizer.json (a path to the file, or a model folder holding it, with its
//           tokenizer_config.json and generation_config.json when present): normalizer,
//           pre-tokenizer, BPE model, added tokens, post-processor and decoder as Hugging
//           Face's tokenizers run them, so the ids are those of `tokenizer(text)`.
// GPT-2 and tokenizer.json tokenizers share one BPE implementation (src/data/bpe.hpp).
// Every method is const and safe to call from many threads at once.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace autotrain::data {

using TokenId = int32_t;

// Where a text sits in its document: prepare cuts long documents at safe points (after a
// newline between two characters that are not whitespace) and tokenizes the pieces in parallel; a
// piece after a cut is a continuation, where rules for the start of a text (a normalizer's
// Prepend, Metaspace's prefix) do not apply.
enum class TextPosition { start, continuation };

// The special tokens around every document in token shards.
struct DocumentFrame {
  std::vector<TokenId> prefix;
  std::vector<TokenId> suffix;
};

// What chat templates read from a tokenizer's folder: the chat_template of
// tokenizer_config.json (or of chat_template.jinja beside it; empty when there is none), where it
// came from, and the spellings of bos_token and eos_token (empty when not set).
struct ChatSettings {
  std::string chat_template;
  std::string origin;  // "<folder>/tokenizer_config.json chat_template"
  std::string bos_token;
  std::string eos_token;
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  // "gpt2", "byte", or the tokenizer.json path it was loaded from.
  virtual std::string name() const = 0;
  // Hugging Face's encode(text, add_special_tokens=False): added tokens written in the text
  // are matched unless the tokenizer was made with parse_special_tokens false (then special
  // ones are ordinary text). Appends to `ids`. An Error for text that is not valid UTF-8
  // (tokenizer.json tokenizers), naming the byte offset.
  virtual void encode_append(std::string_view text, std::vector<TokenId>& ids,
                             TextPosition position) const = 0;
  std::vector<TokenId> encode(std::string_view text) const;
  // The inverse, special tokens included; Throws Error on an id outside [0, vocab_size()).
  virtual std::string decode(std::span<const TokenId> ids) const = 0;
  // One past the largest id (added tokens included).
  virtual int vocab_size() const = 0;
  // The end-of-text token: what prepare writes between documents with add_eos_token.
  virtual TokenId eot_token() const = 0;
  // tokenizer_config.json's pad_token, when it sets one (gpt2 and byte: none).
  virtual std::optional<TokenId> pad_token() const { return std::nullopt; }
  // Every id that ends generation (generation_config.json's eos_token_id list, or eot).
  virtual std::vector<TokenId> stop_tokens() const = 0;
  // The tokens prepare writes around each document. gpt2 and byte: the end-of-text token
  // before each document when add_eos_token (llm.c's layout). tokenizer.json: the
  // post-processor's template around the text (Llama 2's <s>), then the end-of-text token
  // after it when add_eos_token (AutoTrain's rule).
  virtual DocumentFrame document_frame(bool add_eos_token) const = 0;
  // Whether cutting a document after a newline between two non-whitespace characters keeps
  // the ids of the whole (prepare then tokenizes long documents in parallel pieces).
  virtual bool cuts_at_newlines() const = 0;
  // Whether cutting before a space between two non-whitespace characters keeps the ids of the
  // whole (prepare then cuts long lines too, keeping memory per document bounded).
  virtual bool cuts_at_spaces() const { return false; }
  // Files the vocabulary was loaded from (empty for "byte"); prepare hashes them.
  virtual std::vector<std::filesystem::path> vocabulary_files() const = 0;
  // The chat template and special token spellings (none for "byte"; gpt2: <|endoftext|> as both
  // bos and eos, and no template).
  virtual ChatSettings chat_settings() const = 0;
};

struct TokenizerOptions {
  std::filesystem::path gpt2_dir;    // GPT-2 vocabulary folder; empty = data_dir()/gpt2
  bool parse_special_tokens = true;  // match special added tokens written in the text
};

// `spec`: "gpt2", "byte", a tokenizer.json file or a folder holding one. Anything else is an
// Error that says what was expected.
std::unique_ptr<Tokenizer> make_tokenizer(std::string_view spec,
                                          const TokenizerOptions& options = {});
std::vector<std::string> tokenizer_names();

}  // namespace autotrain::data
