#pragma once
// Added tokens of tokenizer.json ("added_tokens"): strings matched in the text before the
// model runs, each standing for one id. Matching is Hugging Face's: leftmost-longest over all
// tokens; a single_word token only where no letter or digit touches it; lstrip / rstrip
// widen a match over the whitespace before / after it.
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

 private:
  // Length of the token matching at text[pos], or 0; sets `token`.
  size_t match_at(std::string_view text, size_t pos, const AddedToken*& token) const;

  std::vector<AddedToken> tokens_;          // longest first
  std::array<bool, 256> first_byte_{};      // whether some token starts with this byte
};

}  // namespace autotrain::data
