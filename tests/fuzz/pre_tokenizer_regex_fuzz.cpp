// A Split pre-tokenizer's regex NUL a text: the pattern compiled as tokenizer.json's are, and
// every match found under the work budget (src/data/regex.hpp). Whatever the pattern, the
// answer is the matches (in order, inside the text, not overlapping, on character boundaries)
// or an Error; never a hang.
#include <string>
#include <utility>
#include <vector>

#include "../../src/data/regex.hpp"  // internal to the data layer
#include "autotrain/data/unicode.hpp"
#include "fuzz_support.hpp"

using namespace autotrain;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto parts = fuzz::split_at_nul(fuzz::as_text(data, size), 2);
  const std::string text = parts.size() > 1 ? std::string(parts[1]) : " Hello, wörld!\n\t42";
  if (data::unicode::invalid_utf8_offset(text) != std::string::npos) return 0;  // checked before
  fuzz::expect_error_or_success([&] {
    const data::Regex regex(parts[0], "tokenizer.json pre_tokenizer.pattern.Regex");
    std::vector<std::pair<size_t, size_t>> matches;
    regex.find_all(text, matches);
    size_t done = 0;
    for (const auto& [begin, end] : matches) {
      if (begin < done || end <= begin || end > text.size()) __builtin_trap();
      if ((static_cast<uint8_t>(text[begin]) & 0xC0) == 0x80) __builtin_trap();
      done = end;
    }
  });
  return 0;
}
