#pragma once
// The few Unicode facts the tokenizers need beyond PCRE2 (added tokens' single_word, lstrip and
// rstrip; decoders): UTF-8 decoding and validation, and the classes
// \p{L} (letters), \p{N} (numbers) and \s (White_Space). Tables are generated from Python's
// unicodedata (src/data/unicode_tables.py); ASCII is answered from a 128-entry table.
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace autotrain::data::unicode {

bool is_letter(uint32_t code_point);
bool is_number(uint32_t code_point);
bool is_whitespace(uint32_t code_point);

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

}  // namespace autotrain::data::unicode
