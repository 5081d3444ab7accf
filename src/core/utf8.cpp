#include "autotrain/core/utf8.hpp"

namespace autotrain::utf8 {

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

}  // namespace autotrain::utf8
