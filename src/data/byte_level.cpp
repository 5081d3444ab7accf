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

}  // namespace autotrain::data::byte_level
