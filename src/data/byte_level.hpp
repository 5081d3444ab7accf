#pragma once
// Byte-level BPE's two fixed parts (GPT-2's design, used by GPT-2, Llama 3 and Qwen):
//  - the byte alphabet: every byte has a visible character in the vocabulary files
//    (bytes_to_unicode(): printable Latin-1 bytes stand for themselves, the other 68 are
//    shifted to U+0100..U+0143);
//  - GPT-2's pre-tokenizer regex, what the ByteLevel pre-tokenizer with use_regex splits by.
//    (A hand-written matcher of it was no faster than PCRE2's JIT: docs/benchmarks.md.)
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace autotrain::data::byte_level {

// The character that stands for each byte.
const std::array<uint32_t, 256>& byte_to_code_point();

// The bytes a vocabulary spelling stands for, or nullopt when it has a character outside the
// byte alphabet (special tokens such as "<|endoftext|>").
std::optional<std::string> spelling_to_bytes(std::string_view spelling);
// The inverse: bytes written in the byte alphabet.
std::string bytes_to_spelling(std::string_view bytes);

constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

}  // namespace autotrain::data::byte_level
