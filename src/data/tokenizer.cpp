#include "autotrain/data/tokenizer.hpp"

#include "autotrain/core/error.hpp"
#include "autotrain/core/paths.hpp"
#include "autotrain/core/strings.hpp"
#include "tokenizer_files.hpp"

namespace autotrain::data {
namespace {

namespace fs = std::filesystem;

// One token per byte. The end-of-text token is byte 0: text never contains NUL, so the
// vocabulary stays 256 and every id is a byte (docs/data.md).
class ByteTokenizer final : public Tokenizer {
 public:
  std::string name() const override { return "byte"; }
  int vocab_size() const override { return 256; }
  TokenId eot_token() const override { return 0; }
  std::vector<TokenId> stop_tokens() const override { return {0}; }
  DocumentFrame document_frame(bool add_eos_token) const override {
    return add_eos_token ? DocumentFrame{{0}, {}} : DocumentFrame{};
  }
  bool cuts_at_newlines() const override { return true; }
  bool cuts_at_spaces() const override { return true; }
  std::vector<fs::path> vocabulary_files() const override { return {}; }
  ChatSettings chat_settings() const override { return {}; }

  void encode_append(std::string_view text, std::vector<TokenId>& ids,
                     TextPosition) const override {
    ids.reserve(ids.size() + text.size());
    for (const char byte : text) ids.push_back(static_cast<uint8_t>(byte));
  }
  std::string decode(std::span<const TokenId> ids) const override {
    std::string text;
    text.reserve(ids.size());
    for (const TokenId id : ids) {
      AT_CHECK(id >= 0 && id < 256, "token id ", id, " is outside the byte vocabulary [0, 256)");
      text.push_back(static_cast<char>(id));
    }
    return text;
  }
};

}  // namespace

std::vector<std::string> tokenizer_names() {
  return {"gpt2", "byte"};
}

std::unique_ptr<Tokenizer> make_tokenizer(std::string_view spec, const TokenizerOptions& options) {
  if (spec == "gpt2") {
    return load_gpt2_tokenizer(options.gpt2_dir.empty() ? data_dir() / "gpt2" : options.gpt2_dir,
                               options);
  }
  if (spec == "byte") return std::make_unique<ByteTokenizer>();
  const fs::path path(spec);
  std::error_code error;
  if (fs::is_directory(path, error)) {
    const fs::path file = path / "tokenizer.json";
    AT_CHECK(fs::exists(file), "tokenizer: the folder ", path.string(),
             " has no tokenizer.json (autotrain reads Hugging Face tokenizer.json files; a "
             "folder with only a SentencePiece tokenizer.model needs converting with "
             "transformers' AutoTokenizer.from_pretrained(...).save_pretrained(...))");
    return load_tokenizer_json(file, options);
  }
  if (fs::is_regular_file(path, error)) return load_tokenizer_json(path, options);
  const bool looks_like_path = spec.find('/') != std::string_view::npos || spec.ends_with(".json");
  throw Error(cat("tokenizer '", spec, "'",
                  looks_like_path ? " does not exist" : did_you_mean(spec, tokenizer_names()),
                  "; expected gpt2, byte, a tokenizer.json file or a folder holding one"));
}

}  // namespace autotrain::data
