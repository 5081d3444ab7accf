#pragma once
// Added tokens of tokenizer.json ("added_tokens"): strings matched in the text before the
// model runs, each standing for one id. Matching is Hugging Face's: leftmost-longest over all
// tokens, without overlaps; a match of a single_word token that a letter or digit touches,
// or of a token left as text, is dropped (its text stays text) and matching resumes after it;
// lstrip / rstrip widen a match over the whitespace before / after it.
//
// The tokens are kept sorted by content, which makes them a trie: the tokens that start with a
// given prefix are one run of the array, and one more byte of text narrows the run by binary
// search. Looking for the longest token at a position costs (its length + 1) * log2(tokens)
// steps, whatever the number of tokens (Hugging Face files hold up to hundreds of thousands).
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
  bool any_rstrip() const;
  // Whether some token's content holds `byte`.
  bool any_contains(char byte) const;

 private:
  // The longest token whose content starts at text[pos], or nullptr.
  const AddedToken* match_at(std::string_view text, size_t pos) const;
  // Whether a match of `token` at [begin, end) stands (single_word, as_text).
  static bool keeps(const AddedToken& token, std::string_view text, size_t begin, size_t end);

  std::vector<AddedToken> tokens_;      // by content (bytes); equal contents in the given order
  std::array<bool, 256> first_byte_{};  // whether some token starts with this byte
};

}  // namespace autotrain::data
