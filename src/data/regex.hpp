#pragma once
// A compiled regular expression for the tokenizer pipeline: PCRE2 in UTF mode with Unicode
// properties (\p{L}, \p{N}; \s, \d and \w in their Unicode meaning, as in the Oniguruma engine
// Hugging Face's tokenizers use), JIT-compiled where the platform has a JIT. Matching is const
// and thread-safe: each thread keeps its own match data.
//
// Patterns come from tokenizer.json files, which are untrusted: one find_all() call may spend at
// most kWorkPerByte steps per byte of its text (plus kWorkBase), all its matches together, or
// it fails naming the pattern. A step is a byte the matcher may read (each match looks at a
// window of the text that doubles only when the match needs more) or one unit of PCRE2's match
// limit (a backtracking step). Real tokenizer patterns spend a few steps per byte.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace autotrain::data {

class Regex {
 public:
  static constexpr uint64_t kWorkPerByte = 64;
  static constexpr uint64_t kWorkBase = 1 << 16;

  // `where` names the pattern's origin in errors ("tokenizer.json: pre_tokenizer.pattern").
  Regex(std::string_view pattern, std::string_view where);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Appends [start, end) byte offsets of every non-empty match, left to right and not
  // overlapping. `text` must be valid UTF-8. An Error past the work budget (see above).
  void find_all(std::string_view text, std::vector<std::pair<size_t, size_t>>& matches) const;
  const std::string& pattern() const { return pattern_; }

 private:
  struct Compiled;
  struct Budget;
  // The next match at or after `start`: false when there is none.
  bool find_next(std::string_view text, size_t start, Budget& budget, size_t& begin,
                 size_t& end) const;

  std::string pattern_;
  std::string where_;
  std::unique_ptr<Compiled> compiled_;
};

}  // namespace autotrain::data
