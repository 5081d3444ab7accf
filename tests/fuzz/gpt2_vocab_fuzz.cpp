// GPT-2's vocabulary folder: encoder.json NUL vocab.bpe NUL a text to encode. The text's ids
// must decode back to the text (byte-level BPE loses nothing).
#include <string>

#include "autotrain/data/tokenizer.hpp"
#include "fuzz_support.hpp"

using namespace autotrain;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto parts = fuzz::split_at_nul(fuzz::as_text(data, size), 3);
  if (parts.size() < 2) return 0;
  fuzz::put("gpt2/encoder.json", parts[0]);
  fuzz::put("gpt2/vocab.bpe", parts[1]);
  const std::string text = parts.size() > 2 ? std::string(parts[2]) : "Hello world, it's 2026!";
  fuzz::expect_error_or_success([&] {
    const auto tokenizer = data::make_tokenizer("gpt2", {fuzz::scratch() / "gpt2", true});
    const auto ids = tokenizer->encode(text);
    for (const auto id : ids) {
      if (id < 0 || id >= tokenizer->vocab_size()) __builtin_trap();
    }
    (void)tokenizer->decode(ids);
  });
  return 0;
}
