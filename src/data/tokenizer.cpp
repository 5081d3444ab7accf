#include "autotrain/data/tokenizer.hpp"

#include "autotrain/core/error.hpp"
#include "autotrain/core/strings.hpp"
#include "tokenizer_impl.hpp"

namespace autotrain::data {
namespace {

// One token per byte. The end-of-text token is byte 0: text never contains NUL, so the
// vocabulary stays 256 and every id is a byte (docs/data.md).
class ByteTokenizer final : public Tokenizer {
 public:
  std::string name() const override { return "byte"; }
  int vocab_size() const override { return 256; }
  TokenId eot_token() const override { return 0; }
  std::vector<std::filesystem::path> vocabulary_files() const override { return {}; }

  std::vector<TokenId> encode(std::string_view text) const override {
    std::vector<TokenId> ids;
    encode_append(text, ids);
    return ids;
  }
  void encode_append(std::string_view text, std::vector<TokenId>& ids) const override {
    ids.reserve(ids.size() + text.size());
    for (const char byte : text) ids.push_back(static_cast<uint8_t>(byte));
  }
  std::string decode(const std::vector<TokenId>& ids) const override {
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

std::unique_ptr<Tokenizer> make_byte_tokenizer() {
  return std::make_unique<ByteTokenizer>();
}

std::vector<std::string> tokenizer_names() {
  return {"gpt2", "byte"};
}

std::unique_ptr<Tokenizer> make_tokenizer(std::string_view name,
                                          const std::filesystem::path& gpt2_dir) {
  if (name == "gpt2") return make_gpt2_tokenizer(gpt2_dir);
  if (name == "byte") return make_byte_tokenizer();
  throw Error(cat("unknown tokenizer '", name, "'", did_you_mean(name, tokenizer_names()),
                  "; expected one of: ", join(tokenizer_names(), ", ")));
}

}  // namespace autotrain::data
