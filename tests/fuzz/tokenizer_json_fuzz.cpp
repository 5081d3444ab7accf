// A Hugging Face tokenizer.json NUL a text: loaded, the text encoded (at the start of a
// document and as a continuation), every id checked against the vocabulary and decoded, and
// the document frame built.
#include <string>
#include <vector>

#include "autotrain/data/tokenizer.hpp"
#include "fuzz_support.hpp"

using namespace autotrain;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto parts = fuzz::split_at_nul(fuzz::as_text(data, size), 2);
  const auto path = fuzz::put("tokenizer/tokenizer.json", parts[0]);
  const std::string text = parts.size() > 1 ? std::string(parts[1]) : " Hello, wörld!\n\t<s>42";
  fuzz::expect_error_or_success([&] {
    const auto tokenizer = data::make_tokenizer(path.string());
    for (const auto position : {data::TextPosition::start, data::TextPosition::continuation}) {
      std::vector<data::TokenId> ids;
      tokenizer->encode_append(text, ids, position);
      for (const auto id : ids) {
        if (id < 0 || id >= tokenizer->vocab_size()) __builtin_trap();
      }
      (void)tokenizer->decode(ids);
    }
    (void)tokenizer->document_frame(true);
    (void)tokenizer->stop_tokens();
  });
  return 0;
}
