#include "autotrain/data/unicode.hpp"

#include <algorithm>
#include <array>

#include "unicode_tables.hpp"

namespace autotrain::data::unicode {
namespace {

using unicode_tables::CodePointRange;

bool in_ranges(const CodePointRange* table, size_t count, uint32_t code_point) {
  const CodePointRange* end = table + count;
  // First range whose last >= code_point; the code point is inside iff first <= code_point.
  const CodePointRange* it = std::lower_bound(
      table, end, code_point,
      [](const CodePointRange& range, uint32_t value) { return range.last < value; });
  return it != end && it->first <= code_point;
}

enum AsciiClass : uint8_t { kOther = 0, kLetter = 1, kNumber = 2, kSpace = 3 };

constexpr std::array<uint8_t, 128> make_ascii_classes() {
  std::array<uint8_t, 128> classes{};
  for (int c = 'a'; c <= 'z'; ++c) classes[c] = kLetter;
  for (int c = 'A'; c <= 'Z'; ++c) classes[c] = kLetter;
  for (int c = '0'; c <= '9'; ++c) classes[c] = kNumber;
  for (int c = 0x09; c <= 0x0D; ++c) classes[c] = kSpace;
  classes[' '] = kSpace;
  return classes;
}

constexpr std::array<uint8_t, 128> kAscii = make_ascii_classes();

}  // namespace

bool is_letter(uint32_t code_point) {
  if (code_point < 128) return kAscii[code_point] == kLetter;
  return in_ranges(unicode_tables::kLetters, unicode_tables::kLetters_count, code_point);
}

bool is_number(uint32_t code_point) {
  if (code_point < 128) return kAscii[code_point] == kNumber;
  return in_ranges(unicode_tables::kNumbers, unicode_tables::kNumbers_count, code_point);
}

bool is_whitespace(uint32_t code_point) {
  if (code_point < 128) return kAscii[code_point] == kSpace;
  // The Unicode White_Space property beyond ASCII (what \s means in the regex engines that
  // GPT-2's reference tokenizers use).
  switch (code_point) {
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      return code_point >= 0x2000 && code_point <= 0x200A;
  }
}

Decoded decode_utf8(std::string_view text, size_t pos) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[i]); };
  const uint8_t lead = byte(pos);
  if (lead < 0x80) return {lead, 1};
  constexpr Decoded kInvalid{0xFFFD, 1};
  size_t length = 0;
  uint32_t code_point = 0;
  uint32_t minimum = 0;
  if ((lead & 0xE0) == 0xC0) {
    length = 2, code_point = lead & 0x1Fu, minimum = 0x80;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3, code_point = lead & 0x0Fu, minimum = 0x800;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4, code_point = lead & 0x07u, minimum = 0x10000;
  } else {
    return kInvalid;
  }
  if (pos + length > text.size()) return kInvalid;
  for (size_t i = 1; i < length; ++i) {
    const uint8_t next = byte(pos + i);
    if ((next & 0xC0) != 0x80) return kInvalid;
    code_point = (code_point << 6) | (next & 0x3Fu);
  }
  // Overlong forms, UTF-16 surrogates and values past U+10FFFF are not UTF-8.
  if (code_point < minimum || code_point > 0x10FFFF ||
      (code_point >= 0xD800 && code_point <= 0xDFFF))
    return kInvalid;
  return {code_point, length};
}

size_t invalid_utf8_offset(std::string_view text) {
  for (size_t pos = 0; pos < text.size();) {
    if (static_cast<uint8_t>(text[pos]) < 0x80) {
      ++pos;
      continue;
    }
    const Decoded decoded = decode_utf8(text, pos);
    if (decoded.length == 1) return pos;
    pos += decoded.length;
  }
  return std::string_view::npos;
}

}  // namespace autotrain::data::unicode
