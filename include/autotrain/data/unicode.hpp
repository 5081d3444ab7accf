#pragma once
// The few Unicode facts the tokenizers need beyond PCRE2 (added tokens' single_word, lstrip and
// rstrip; decoders): UTF-8 decoding and validation (core/utf8.hpp), and the classes
// \p{L} (letters), \p{N} (numbers) and \s (White_Space). Tables are generated from Python's
// unicodedata (src/data/unicode_tables.py); ASCII is answered from a 128-entry table.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "autotrain/core/utf8.hpp"

namespace autotrain::data::unicode {

bool is_letter(uint32_t code_point);
bool is_number(uint32_t code_point);
bool is_whitespace(uint32_t code_point);

// UTF-8 decoding lives in core (the configuration validates strings with it).
using utf8::decode_utf8;
using utf8::Decoded;
using utf8::invalid_utf8_offset;

}  // namespace autotrain::data::unicode
