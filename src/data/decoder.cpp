#include "decoder.hpp"

#include "autotrain/core/strings.hpp"
#include "autotrain/data/unicode.hpp"
#include "byte_level.hpp"

namespace autotrain::data {
namespace {

using tokenizer_json::Json;
using tokenizer_json::path;

constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";  // U+FFFD

bool is_valid_utf8(std::string_view bytes) {
  for (size_t pos = 0; pos < bytes.size();) {
    const unicode::Decoded decoded = unicode::decode_utf8(bytes, pos);
    if (decoded.code_point == 0xFFFD && bytes.substr(pos, 3) != kReplacementCharacter) return false;
    pos += decoded.length;
  }
  return true;
}

// All spellings to the bytes they stand for, as one string; `lossy`: invalid UTF-8 replaced
// as Hugging Face does (else the bytes as they are: GPT-2's own files round-trip any bytes).
class ByteLevel final : public Decoder {
 public:
  explicit ByteLevel(bool lossy) : lossy_(lossy) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string bytes;
    for (const auto& token : tokens) {
      if (auto decoded = byte_level::spelling_to_bytes(token)) {
        bytes += *decoded;
      } else {
        // A special token: its characters one by one, those of the alphabet as bytes.
        for (size_t pos = 0; pos < token.size();) {
          const size_t length = unicode::decode_utf8(token, pos).length;
          const std::string_view character = std::string_view(token).substr(pos, length);
          auto byte = byte_level::spelling_to_bytes(character);
          bytes += byte ? std::string_view(*byte) : character;
          pos += length;
        }
      }
    }
    tokens.assign(1, lossy_ ? utf8_lossy(bytes) : bytes);
  }

 private:
  bool lossy_;
};

class Replace final : public Decoder {
 public:
  Replace(const Json& json, const std::string& where)
      : pattern_(tokenizer_json::string_member(tokenizer_json::member(json, "pattern", where),
                                               "String", path(where, "pattern"))),
        content_(tokenizer_json::string_member(json, "content", where)) {
    AT_CHECK(!pattern_.empty(), path(where, "pattern.String"), ": must not be empty");
  }
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (auto& token : tokens) token = replace_all(token, pattern_, content_);
  }

 private:
  std::string pattern_;
  std::string content_;
};

// Runs of <0xNN> tokens become the text their bytes spell; bytes that are not valid UTF-8
// become one U+FFFD each, as Hugging Face's ByteFallback.
class ByteFallback final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::vector<std::string> out;
    std::string bytes;
    size_t byte_tokens = 0;
    const auto flush = [&] {
      if (byte_tokens == 0) return;
      if (is_valid_utf8(bytes)) {
        out.push_back(bytes);
      } else {
        for (size_t i = 0; i < byte_tokens; ++i) out.emplace_back(kReplacementCharacter);
      }
      bytes.clear();
      byte_tokens = 0;
    };
    for (auto& token : tokens) {
      if (const int byte = parse_byte_token(token); byte >= 0) {
        bytes.push_back(static_cast<char>(byte));
        ++byte_tokens;
        continue;
      }
      flush();
      out.push_back(std::move(token));
    }
    flush();
    tokens = std::move(out);
  }

 private:
  static int parse_byte_token(std::string_view token) {
    if (token.size() != 6 || !token.starts_with("<0x") || token[5] != '>') return -1;
    int value = 0;
    for (const char c : token.substr(3, 2)) {
      const int digit = c >= '0' && c <= '9'   ? c - '0'
                        : c >= 'A' && c <= 'F' ? c - 'A' + 10
                        : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                               : -1;
      if (digit < 0) return -1;
      value = value * 16 + digit;
    }
    return value;
  }
};

class Fuse final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string all;
    for (const auto& token : tokens) all += token;
    tokens.assign(1, std::move(all));
  }
};

// Up to `start` leading and `stop` trailing copies of one character off each token.
class Strip final : public Decoder {
 public:
  Strip(const Json& json, const std::string& where)
      : content_(tokenizer_json::string_member(json, "content", where)),
        start_(tokenizer_json::int_member(json, "start", 0, where)),
        stop_(tokenizer_json::int_member(json, "stop", 0, where)) {
    AT_CHECK(!content_.empty(), path(where, "content"), ": must be one character");
  }
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (auto& token : tokens) {
      size_t begin = 0;
      for (int i = 0; i < start_ && token.compare(begin, content_.size(), content_) == 0; ++i)
        begin += content_.size();
      size_t end = token.size();
      for (int i = 0; i < stop_ && end >= begin + content_.size() &&
                      token.compare(end - content_.size(), content_.size(), content_) == 0;
           ++i)
        end -= content_.size();
      token = token.substr(begin, end - begin);
    }
  }

 private:
  std::string content_;
  int start_;
  int stop_;
};

// The replacement character back to spaces, except in the first token when the encoder
// prepends one: there every replacement character is dropped, as Hugging Face's decoder does.
class Metaspace final : public Decoder {
 public:
  Metaspace(std::string replacement, bool prepends, const std::string& where)
      : replacement_(std::move(replacement)), prepends_(prepends) {
    AT_CHECK(!replacement_.empty(), path(where, "replacement"), ": must be one character");
  }
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      tokens[i] = replace_all(tokens[i], replacement_, i == 0 && prepends_ ? "" : " ");
    }
  }

 private:
  std::string replacement_;
  bool prepends_;
};

class Sequence final : public Decoder {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Decoder>> steps) : steps_(std::move(steps)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (const auto& step : steps_) step->decode_chain(tokens);
  }

 private:
  std::vector<std::unique_ptr<Decoder>> steps_;
};

bool metaspace_prepends(const Json& json, const std::string& where) {
  if (auto scheme = tokenizer_json::optional_string(json, "prepend_scheme", where))
    return *scheme != "never";
  return tokenizer_json::bool_member(json, "add_prefix_space", true, where);
}

}  // namespace

// Bytes of the maximal ill-formed subsequence at bytes[pos] (Unicode's "maximal subpart",
// which Rust's from_utf8_lossy replaces by one U+FFFD): the lead and the continuation bytes
// that could still have begun a valid character.
size_t ill_formed_length(std::string_view bytes, size_t pos) {
  const auto lead = static_cast<uint8_t>(bytes[pos]);
  const size_t length = lead >= 0xC2 && lead <= 0xDF   ? 2
                        : lead >= 0xE0 && lead <= 0xEF ? 3
                        : lead >= 0xF0 && lead <= 0xF4 ? 4
                                                       : 1;
  // The second byte's range is narrower after some leads (no overlongs, no surrogates).
  const uint8_t low = lead == 0xE0 ? 0xA0 : lead == 0xF0 ? 0x90 : 0x80;
  const uint8_t high = lead == 0xED ? 0x9F : lead == 0xF4 ? 0x8F : 0xBF;
  size_t taken = 1;
  while (taken < length && pos + taken < bytes.size()) {
    const auto next = static_cast<uint8_t>(bytes[pos + taken]);
    if (taken == 1 ? next < low || next > high : (next & 0xC0) != 0x80) break;
    ++taken;
  }
  return taken;
}

std::string utf8_lossy(std::string_view bytes) {
  if (is_valid_utf8(bytes)) return std::string(bytes);
  std::string out;
  for (size_t pos = 0; pos < bytes.size();) {
    const unicode::Decoded decoded = unicode::decode_utf8(bytes, pos);
    if (decoded.code_point == 0xFFFD && bytes.substr(pos, 3) != kReplacementCharacter) {
      out += kReplacementCharacter;
      pos += ill_formed_length(bytes, pos);
    } else {
      out += bytes.substr(pos, decoded.length);
      pos += decoded.length;
    }
  }
  return out;
}

std::unique_ptr<Decoder> make_decoder(const Json& json, const std::string& where) {
  if (json.is_null()) return nullptr;
  const std::string type = tokenizer_json::type_of(json, where);
  if (type == "ByteLevel") return std::make_unique<ByteLevel>(true);
  if (type == "Replace") return std::make_unique<Replace>(json, where);
  if (type == "ByteFallback") return std::make_unique<ByteFallback>();
  if (type == "Fuse") return std::make_unique<Fuse>();
  if (type == "Strip") return std::make_unique<Strip>(json, where);
  if (type == "Metaspace") {
    return std::make_unique<Metaspace>(tokenizer_json::string_member(json, "replacement", where),
                                       metaspace_prepends(json, where), where);
  }
  if (type == "Sequence") {
    return std::make_unique<Sequence>(
        tokenizer_json::component_list<Decoder>(json, "decoders", where, make_decoder));
  }
  tokenizer_json::unsupported(where, "decoder", type,
                              "ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace, Sequence");
}

std::unique_ptr<Decoder> make_gpt2_decoder() {
  return std::make_unique<ByteLevel>(false);
}

}  // namespace autotrain::data
