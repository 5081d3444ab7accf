#pragma once
// UTF-8 decoding and validation: what the tokenizers decode text with, and what the
// configuration checks every string value with (a file's name or a project name that is not
// UTF-8 cannot be written back as JSON).
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace autotrain::utf8 {

struct Decoded {
  uint32_t code_point;
  size_t length;  // bytes consumed, >= 1
};

// Decodes the code point starting at text[pos]. Invalid UTF-8 (a stray continuation byte, a
// truncated or overlong sequence, an encoded UTF-16 surrogate) decodes one byte as U+FFFD-like
// "other" (code point 0xFFFD, length 1), so byte-level tokenizers still see every byte exactly
// once.
Decoded decode_utf8(std::string_view text, size_t pos);

// Offset of the first byte that is not part of valid UTF-8, or npos.
size_t invalid_utf8_offset(std::string_view text);

}  // namespace autotrain::utf8
