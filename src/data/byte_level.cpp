#include "byte_level.hpp"

#include "autotrain/data/unicode.hpp"

namespace autotrain::data::byte_level {
namespace {

std::array<uint32_t, 256> make_byte_to_code_point() {
  std::array<uint32_t, 256> table{};
  uint32_t next_shifted = 256;
  for (uint32_t byte = 0; byte < 256; ++byte) {
    const bool printable = (byte >= '!' && byte <= '~') || (byte >= 0xA1 && byte <= 0xAC) ||
                           (byte >= 0xAE && byte <= 0xFF);
    table[byte] = printable ? byte : next_shifted++;
  }
  return table;
}

// code point -> byte, -1 outside the alphabet (which ends at U+0143).
std::array<int, 324> make_code_point_to_byte() {
  std::array<int, 324> table;
  table.fill(-1);
  const auto& to_code_point = byte_to_code_point();
  for (int byte = 0; byte < 256; ++byte) table[to_code_point[static_cast<size_t>(byte)]] = byte;
  return table;
}

void append_utf8(std::string& out, uint32_t code_point) {
  if (code_point < 0x80) {
    out.push_back(static_cast<char>(code_point));
  } else {
    out.push_back(static_cast<char>(0xC0 | (code_point >> 6)));
    out.push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  }
}

enum class CharClass { letter, number, space, other };

CharClass classify(uint32_t code_point) {
  if (unicode::is_letter(code_point)) return CharClass::letter;
  if (unicode::is_number(code_point)) return CharClass::number;
  if (unicode::is_whitespace(code_point)) return CharClass::space;
  return CharClass::other;
}

// Length in bytes of the contraction at text[pos] ('s 't 're 've 'm 'll 'd), or 0.
size_t contraction_length(std::string_view text, size_t pos) {
  if (text[pos] != '\'' || pos + 1 >= text.size()) return 0;
  const char first = text[pos + 1];
  if (first == 's' || first == 't' || first == 'm' || first == 'd') return 2;
  if (pos + 2 >= text.size()) return 0;
  const char second = text[pos + 2];
  if ((first == 'r' && second == 'e') || (first == 'v' && second == 'e') ||
      (first == 'l' && second == 'l'))
    return 3;
  return 0;
}

// End of the whitespace run starting at `pos`, by "\s+(?!\S)|\s+": at the end of the text all
// of it; before a non-space all but its last character (which then joins what follows, or is
// taken alone by "\s+"). A run of one character before a non-space is taken alone.
size_t whitespace_piece_end(std::string_view text, size_t pos) {
  size_t end = pos;
  size_t last_start = pos;
  while (end < text.size()) {
    const unicode::Decoded decoded = unicode::decode_utf8(text, end);
    if (!unicode::is_whitespace(decoded.code_point)) break;
    last_start = end;
    end += decoded.length;
  }
  if (end < text.size() && last_start > pos) end = last_start;
  return end;
}

}  // namespace

const std::array<uint32_t, 256>& byte_to_code_point() {
  static const std::array<uint32_t, 256> table = make_byte_to_code_point();
  return table;
}

std::optional<std::string> spelling_to_bytes(std::string_view spelling) {
  static const std::array<int, 324> to_byte = make_code_point_to_byte();
  std::string bytes;
  bytes.reserve(spelling.size());
  for (size_t pos = 0; pos < spelling.size();) {
    const unicode::Decoded decoded = unicode::decode_utf8(spelling, pos);
    if (decoded.code_point >= to_byte.size() || to_byte[decoded.code_point] < 0) return {};
    bytes.push_back(static_cast<char>(to_byte[decoded.code_point]));
    pos += decoded.length;
  }
  return bytes;
}

std::string bytes_to_spelling(std::string_view bytes) {
  std::string spelling;
  spelling.reserve(bytes.size() * 2);
  for (const char byte : bytes) {
    append_utf8(spelling, byte_to_code_point()[static_cast<uint8_t>(byte)]);
  }
  return spelling;
}

void split_gpt2(std::string_view text, std::vector<std::pair<size_t, size_t>>& pieces) {
  const size_t size = text.size();
  size_t pos = 0;
  while (pos < size) {
    if (const size_t contraction = contraction_length(text, pos)) {
      pieces.emplace_back(pos, pos + contraction);
      pos += contraction;
      continue;
    }
    const unicode::Decoded first = unicode::decode_utf8(text, pos);
    CharClass run_class = classify(first.code_point);
    size_t run_start = pos;  // first byte of the letter/number/other run
    if (first.code_point == ' ' && pos + 1 < size) {
      // " ?\p{L}+" etc.: a single ASCII space joins the run that follows it.
      const CharClass next = classify(unicode::decode_utf8(text, pos + 1).code_point);
      if (next != CharClass::space) {
        run_class = next;
        run_start = pos + 1;
      }
    }
    size_t end = run_start;
    if (run_class == CharClass::space) {
      end = whitespace_piece_end(text, pos);
    } else {
      while (end < size) {
        const unicode::Decoded decoded = unicode::decode_utf8(text, end);
        if (classify(decoded.code_point) != run_class) break;
        end += decoded.length;
      }
    }
    pieces.emplace_back(pos, end);
    pos = end;
  }
}

}  // namespace autotrain::data::byte_level
