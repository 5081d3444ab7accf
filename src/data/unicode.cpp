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

}  // namespace autotrain::data::unicode
