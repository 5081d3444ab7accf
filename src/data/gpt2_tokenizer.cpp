// GPT-2's byte-level BPE, exact against the reference encoder (OpenAI's encoder.py):
//   1. pre-tokenize with the regex  's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+|
//   ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//      (implemented by hand over code points: std::regex knows no \p{L});
//   2. each piece is a byte string; start from one token per byte and apply the merges of
//      vocab.bpe lowest rank first until none applies.
// Tokens are handled as ids throughout: a merge is (left id, right id) -> (rank, merged id),
// so BPE never builds strings. Pieces recur constantly in text, so each thread keeps a cache
// piece -> ids (no locks; bounded, cleared when full).
#include <atomic>
#include <fstream>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "autotrain/core/error.hpp"
#include "autotrain/core/paths.hpp"
#include "autotrain/core/strings.hpp"
#include "autotrain/data/tokenizer.hpp"
#include "autotrain/data/unicode.hpp"
#include "tokenizer_impl.hpp"

namespace autotrain::data {
namespace {

// GPT-2's bytes_to_unicode(): printable Latin-1 bytes stand for themselves, the other 68 bytes
// are shifted to U+0100.. so that every byte has a visible character in encoder.json.
std::array<uint32_t, 256> byte_to_code_point() {
  std::array<uint32_t, 256> table{};
  uint32_t next_shifted = 256;
  for (uint32_t byte = 0; byte < 256; ++byte) {
    const bool printable = (byte >= '!' && byte <= '~') || (byte >= 0xA1 && byte <= 0xAC) ||
                           (byte >= 0xAE && byte <= 0xFF);
    table[byte] = printable ? byte : next_shifted++;
  }
  return table;
}

// Converts a vocabulary entry (characters standing for bytes) back to the bytes.
std::string entry_to_bytes(std::string_view entry, const std::array<int, 324>& code_point_to_byte,
                           const std::filesystem::path& file) {
  std::string bytes;
  for (size_t pos = 0; pos < entry.size();) {
    const unicode::Decoded decoded = unicode::decode_utf8(entry, pos);
    AT_CHECK(decoded.code_point < code_point_to_byte.size() &&
                 code_point_to_byte[decoded.code_point] >= 0,
             file.string(), ": entry '", entry,
             "' has a character outside GPT-2's byte alphabet; is this a GPT-2 vocabulary?");
    bytes.push_back(static_cast<char>(code_point_to_byte[decoded.code_point]));
    pos += decoded.length;
  }
  return bytes;
}

enum class CharClass { letter, number, space, other };

CharClass classify(uint32_t code_point) {
  if (unicode::is_letter(code_point)) return CharClass::letter;
  if (unicode::is_number(code_point)) return CharClass::number;
  if (unicode::is_whitespace(code_point)) return CharClass::space;
  return CharClass::other;
}

// Length in bytes of the contraction at text[pos] ('s 't 're 've 'm 'll 'd), or 0.
size_t contraction_length(std::string_view text, size_t pos) {
  if (text[pos] != '\'' || pos + 1 >= text.size()) return 0;
  const char first = text[pos + 1];
  if (first == 's' || first == 't' || first == 'm' || first == 'd') return 2;
  if (pos + 2 >= text.size()) return 0;
  const char second = text[pos + 2];
  if ((first == 'r' && second == 'e') || (first == 'v' && second == 'e') ||
      (first == 'l' && second == 'l'))
    return 3;
  return 0;
}

struct TransparentHash {
  using is_transparent = void;
  size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
};

using PieceCache =
    std::unordered_map<std::string, std::vector<TokenId>, TransparentHash, std::equal_to<>>;

struct ThreadCache {
  uint64_t owner = 0;  // instance id of the tokenizer the entries belong to
  PieceCache pieces;
  std::vector<TokenId> word;  // BPE scratch
};

constexpr size_t kMaxCachedPieces = 1 << 18;
std::atomic<uint64_t> next_instance_id{1};

class Gpt2Tokenizer final : public Tokenizer {
 public:
  explicit Gpt2Tokenizer(const std::filesystem::path& dir)
      : encoder_file_(dir / "encoder.json"),
        merges_file_(dir / "vocab.bpe"),
        instance_id_(next_instance_id++) {
    const std::array<uint32_t, 256> to_code_point = byte_to_code_point();
    std::array<int, 324> to_byte;
    to_byte.fill(-1);
    for (int byte = 0; byte < 256; ++byte) to_byte[to_code_point[byte]] = byte;

    std::ifstream encoder_in(encoder_file_);
    AT_CHECK(encoder_in, "cannot open the GPT-2 vocabulary ", encoder_file_.string(),
             " (set AUTOTRAIN_DATA_DIR to the folder holding gpt2/encoder.json)");
    nlohmann::json encoder;
    try {
      encoder = nlohmann::json::parse(encoder_in);
    } catch (const nlohmann::json::exception& error) {
      throw Error(cat(encoder_file_.string(), ": not valid JSON: ", error.what()));
    }
    AT_CHECK(encoder.is_object(), encoder_file_.string(), ": expected a JSON object token -> id");
    id_to_bytes_.resize(encoder.size());
    std::unordered_map<std::string, TokenId> bytes_to_id;
    bytes_to_id.reserve(encoder.size());
    for (const auto& [entry, value] : encoder.items()) {
      AT_CHECK(value.is_number_integer() && value.get<int64_t>() >= 0 &&
                   value.get<int64_t>() < static_cast<int64_t>(encoder.size()),
               encoder_file_.string(), ": id of '", entry, "' must be an integer in [0, ",
               encoder.size(), ")");
      const auto id = value.get<TokenId>();
      if (entry == "<|endoftext|>") {
        eot_ = id;
        id_to_bytes_[id] = entry;
        continue;
      }
      std::string bytes = entry_to_bytes(entry, to_byte, encoder_file_);
      id_to_bytes_[id] = bytes;
      bytes_to_id.emplace(std::move(bytes), id);
    }
    AT_CHECK(eot_ >= 0, encoder_file_.string(), ": has no <|endoftext|> token");
    for (int byte = 0; byte < 256; ++byte) {
      const auto it = bytes_to_id.find(std::string(1, static_cast<char>(byte)));
      AT_CHECK(it != bytes_to_id.end(), encoder_file_.string(), ": no token for byte ", byte);
      byte_ids_[byte] = it->second;
    }

    std::ifstream merges_in(merges_file_);
    AT_CHECK(merges_in, "cannot open the GPT-2 merges ", merges_file_.string());
    std::string line;
    int rank = 0;
    size_t line_number = 0;
    while (std::getline(merges_in, line)) {
      ++line_number;
      if (line.empty() || line.starts_with("#version")) continue;
      const size_t space = line.find(' ');
      AT_CHECK(space != std::string::npos && space > 0 && space + 1 < line.size(),
               merges_file_.string(), ":", line_number, ": expected 'left right', got '", line,
               "'");
      const std::string left =
          entry_to_bytes(std::string_view(line).substr(0, space), to_byte, merges_file_);
      const std::string right =
          entry_to_bytes(std::string_view(line).substr(space + 1), to_byte, merges_file_);
      const auto left_id = bytes_to_id.find(left);
      const auto right_id = bytes_to_id.find(right);
      const auto merged_id = bytes_to_id.find(left + right);
      AT_CHECK(left_id != bytes_to_id.end() && right_id != bytes_to_id.end() &&
                   merged_id != bytes_to_id.end(),
               merges_file_.string(), ":", line_number, ": merge '", line,
               "' uses tokens that are not in ", encoder_file_.string());
      merges_.emplace(pair_key(left_id->second, right_id->second),
                      Merge{rank++, merged_id->second});
    }
  }

  std::string name() const override { return "gpt2"; }
  int vocab_size() const override { return static_cast<int>(id_to_bytes_.size()); }
  TokenId eot_token() const override { return eot_; }
  std::vector<std::filesystem::path> vocabulary_files() const override {
    return {encoder_file_, merges_file_};
  }

  std::vector<TokenId> encode(std::string_view text) const override {
    std::vector<TokenId> ids;
    ids.reserve(text.size() / 3 + 1);
    encode_append(text, ids);
    return ids;
  }

  void encode_append(std::string_view text, std::vector<TokenId>& ids) const override {
    thread_local ThreadCache cache;
    if (cache.owner != instance_id_) {
      cache.pieces.clear();
      cache.owner = instance_id_;
    }
    for_each_piece(text, [&](std::string_view piece) {
      if (piece.size() == 1) {
        ids.push_back(byte_ids_[static_cast<uint8_t>(piece[0])]);
        return;
      }
      auto hit = cache.pieces.find(piece);
      if (hit == cache.pieces.end()) {
        if (cache.pieces.size() >= kMaxCachedPieces) cache.pieces.clear();
        byte_pair_merge(piece, cache.word);
        hit = cache.pieces.emplace(std::string(piece), cache.word).first;
      }
      ids.insert(ids.end(), hit->second.begin(), hit->second.end());
    });
  }

  std::string decode(const std::vector<TokenId>& ids) const override {
    std::string text;
    for (const TokenId id : ids) {
      AT_CHECK(id >= 0 && id < vocab_size(), "token id ", id,
               " is outside the gpt2 vocabulary [0, ", vocab_size(), ")");
      text += id_to_bytes_[id];
    }
    return text;
  }

 private:
  struct Merge {
    int rank;
    TokenId merged;
  };

  static uint64_t pair_key(TokenId left, TokenId right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) |
           static_cast<uint32_t>(right);
  }

  // Calls emit(piece) for each match of GPT-2's pre-tokenizer regex, in order. The pieces
  // cover the text exactly.
  template <typename Emit>
  static void for_each_piece(std::string_view text, Emit&& emit) {
    const size_t size = text.size();
    size_t pos = 0;
    while (pos < size) {
      if (const size_t contraction = contraction_length(text, pos)) {
        emit(text.substr(pos, contraction));
        pos += contraction;
        continue;
      }
      const unicode::Decoded first = unicode::decode_utf8(text, pos);
      CharClass run_class = classify(first.code_point);
      size_t run_start = pos;  // first byte of the letter/number/other run
      if (first.code_point == ' ' && pos + 1 < size) {
        // " ?\p{L}+" etc.: a single ASCII space joins the run that follows it.
        const CharClass next = classify(unicode::decode_utf8(text, pos + 1).code_point);
        if (next != CharClass::space) {
          run_class = next;
          run_start = pos + 1;
        }
      }
      if (run_class != CharClass::space) {
        size_t end = run_start;
        while (end < size) {
          const unicode::Decoded decoded = unicode::decode_utf8(text, end);
          if (classify(decoded.code_point) != run_class) break;
          end += decoded.length;
        }
        emit(text.substr(pos, end - pos));
        pos = end;
        continue;
      }
      // Whitespace run [pos, end). "\s+(?!\S)": at the end of the text take all of it; before
      // a non-space take all but its last character (which then joins what follows, or is
      // taken alone by "\s+"). A run of one character before a non-space is taken alone.
      size_t end = pos;
      size_t last_start = pos;
      while (end < size) {
        const unicode::Decoded decoded = unicode::decode_utf8(text, end);
        if (!unicode::is_whitespace(decoded.code_point)) break;
        last_start = end;
        end += decoded.length;
      }
      if (end < size && last_start > pos) end = last_start;
      emit(text.substr(pos, end - pos));
      pos = end;
    }
  }

  // BPE over ids. Merging every occurrence of the lowest-rank pair per pass equals the
  // reference's loop (a merged token only takes part in merges of higher rank).
  void byte_pair_merge(std::string_view piece, std::vector<TokenId>& word) const {
    word.clear();
    for (const char byte : piece) word.push_back(byte_ids_[static_cast<uint8_t>(byte)]);
    while (word.size() > 1) {
      int best_rank = std::numeric_limits<int>::max();
      uint64_t best_pair = 0;
      TokenId best_merged = -1;
      for (size_t i = 0; i + 1 < word.size(); ++i) {
        const auto it = merges_.find(pair_key(word[i], word[i + 1]));
        if (it != merges_.end() && it->second.rank < best_rank) {
          best_rank = it->second.rank;
          best_pair = it->first;
          best_merged = it->second.merged;
        }
      }
      if (best_merged < 0) break;
      size_t out = 0;
      for (size_t i = 0; i < word.size(); ++i) {
        if (i + 1 < word.size() && pair_key(word[i], word[i + 1]) == best_pair) {
          word[out++] = best_merged;
          ++i;
        } else {
          word[out++] = word[i];
        }
      }
      word.resize(out);
    }
  }

  std::filesystem::path encoder_file_;
  std::filesystem::path merges_file_;
  uint64_t instance_id_;
  std::vector<std::string> id_to_bytes_;
  std::array<TokenId, 256> byte_ids_{};
  std::unordered_map<uint64_t, Merge> merges_;
  TokenId eot_ = -1;
};

}  // namespace

std::unique_ptr<Tokenizer> make_gpt2_tokenizer(const std::filesystem::path& dir) {
  return std::make_unique<Gpt2Tokenizer>(dir.empty() ? data_dir() / "gpt2" : dir);
}

}  // namespace autotrain::data
