// Training text as users hand it over: the first byte picks .csv, .jsonl or .txt, the rest is
// the file, read with the default text column.
#include <string>

#include "autotrain/data/text_input.hpp"
#include "fuzz_support.hpp"

using namespace autotrain;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const char* const kExtensions[] = {".csv", ".jsonl", ".txt"};
  static const data::InputFormat kFormats[] = {data::InputFormat::csv, data::InputFormat::jsonl,
                                               data::InputFormat::txt};
  const size_t kind = data[0] % 3;
  const auto path =
      fuzz::put(std::string("train") + kExtensions[kind], fuzz::as_text(data + 1, size - 1));
  fuzz::expect_error_or_success([&] {
    size_t bytes = 0;
    data::read_documents({path, kFormats[kind]}, "text",
                         [&](std::string&& text, bool) { bytes += text.size(); });
    if (bytes > size) __builtin_trap();  // documents cannot hold more text than the file
  });
  return 0;
}
