#pragma once
// A compiled regular expression for the tokenizer pipeline: PCRE2 in UTF mode with Unicode
// properties (\p{L}, \p{N}; \s, \d and \w in their Unicode meaning, as in the Oniguruma engine
// Hugging Face's tokenizers use), JIT-compiled where the platform has a JIT. Matching is const
// and thread-safe: each thread keeps its own match data.
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace autotrain::data {

class Regex {
 public:
  // `where` names the pattern's origin in errors ("tokenizer.json: pre_tokenizer.pattern").
  Regex(std::string_view pattern, std::string_view where);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Appends [start, end) byte offsets of every non-empty match, left to right and not
  // overlapping. `text` must be valid UTF-8.
  void find_all(std::string_view text, std::vector<std::pair<size_t, size_t>>& matches) const;
  const std::string& pattern() const { return pattern_; }

 private:
  struct Compiled;
  std::string pattern_;
  std::string where_;
  std::unique_ptr<Compiled> compiled_;
};

}  // namespace autotrain::data
