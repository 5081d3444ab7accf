#pragma once
// Added tokens of tokenizer.json ("added_tokens"): strings matched in the text before the
// model runs, each standing for one id. Matching is Hugging Face's: leftmost-longest over all
// tokens, without overlaps; a match of a single_word token that a letter or digit touches,
// or of a token left as text, is dropped (its text stays text) and matching resumes after it;
// lstrip / rstrip widen a match over the whitespace before / after it.
#include <array>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "autotrain/data/tokenizer.hpp"

namespace autotrain::data {

struct AddedToken {
  TokenId id = 0;
  std::string content;
  bool special = false;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = false;  // matched in normalized text rather than the raw text
  bool as_text = false;     // matched, but left in the text (special, parse_special_tokens off)
};

// A stretch of text: an added token's id, or text (id -1) for the model.
struct Section {
  TokenId id;
  size_t begin;
  size_t end;
};

class AddedTokenMatcher {
 public:
  AddedTokenMatcher() = default;
  explicit AddedTokenMatcher(std::vector<AddedToken> tokens);

  bool empty() const { return tokens_.empty(); }
  // Cuts `text` into sections covering it; text sections are never empty.
  void split(std::string_view text, std::vector<Section>& sections) const;
  bool any_lstrip() const;
  const std::vector<AddedToken>& tokens() const { return tokens_; }

 private:
  // The longest token whose content starts at text[pos], or nullptr.
  const AddedToken* match_at(std::string_view text, size_t pos) const;
  // Whether a match of `token` at [begin, end) stands (single_word, as_text).
  static bool keeps(const AddedToken& token, std::string_view text, size_t begin, size_t end);

  std::vector<AddedToken> tokens_;      // longest first
  std::array<bool, 256> first_byte_{};  // whether some token starts with this byte
};

}  // namespace autotrain::data
