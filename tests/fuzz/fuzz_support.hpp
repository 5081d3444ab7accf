#pragma once
// What every fuzz target shares (tests/fuzz/README.md). A target is one function,
// LLVMFuzzerTestOneInput, that hands the bytes to one parser the way a user or a file system
// would: as a file in a scratch folder, or as the argument list. Bad input must end in an
// autotrain::Error (the parser's answer: a message naming the file and what was expected);
// anything else — another exception, a crash, a sanitizer report, an allocation beyond
// libFuzzer's limit, a hang — is a defect and stops the fuzzer with the input that caused it.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "autotrain/core/error.hpp"

namespace autotrain::fuzz {

// This process's scratch folder (created on first use, removed at exit).
const std::filesystem::path& scratch();

// Writes `bytes` to scratch()/name (replacing it) and returns the path.
std::filesystem::path put(const std::string& name, std::string_view bytes);

// The input as text.
inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// At most `max_parts` pieces of `text`, cut at NUL bytes (which no JSON, YAML or CSV file in
// the corpus holds); the last piece keeps any further NULs.
std::vector<std::string_view> split_at_nul(std::string_view text, size_t max_parts);

// Runs `body`; an autotrain::Error is a valid answer to a bad input and is swallowed.
template <typename Body>
void expect_error_or_success(Body&& body) {
  try {
    body();
  } catch (const autotrain::Error&) {
  }
}

}  // namespace autotrain::fuzz
