#include "added_tokens.hpp"

#include <algorithm>

#include "autotrain/data/unicode.hpp"

namespace autotrain::data {
namespace {

// The code point ending at text[end) (text valid UTF-8 before `end`).
uint32_t code_point_before(std::string_view text, size_t end) {
  size_t start = end - 1;
  while (start > 0 && (static_cast<uint8_t>(text[start]) & 0xC0) == 0x80) --start;
  return unicode::decode_utf8(text, start).code_point;
}

bool is_word_character(uint32_t code_point) {
  return unicode::is_letter(code_point) || unicode::is_number(code_point);
}

// Start of the run of whitespace that ends at `end`, no further left than `floor`.
size_t whitespace_start(std::string_view text, size_t end, size_t floor) {
  while (end > floor && unicode::is_whitespace(code_point_before(text, end))) {
    --end;
    while (end > floor && (static_cast<uint8_t>(text[end]) & 0xC0) == 0x80) --end;
  }
  return end;
}

size_t whitespace_end(std::string_view text, size_t begin) {
  while (begin < text.size()) {
    const unicode::Decoded decoded = unicode::decode_utf8(text, begin);
    if (!unicode::is_whitespace(decoded.code_point)) break;
    begin += decoded.length;
  }
  return begin;
}

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(std::vector<AddedToken> tokens) : tokens_(std::move(tokens)) {
  std::erase_if(tokens_, [](const AddedToken& token) { return token.content.empty(); });
  // std::string orders bytes as unsigned char, as byte_at() below does.
  std::stable_sort(tokens_.begin(), tokens_.end(),
                   [](const AddedToken& a, const AddedToken& b) { return a.content < b.content; });
  for (const auto& token : tokens_) first_byte_[static_cast<uint8_t>(token.content[0])] = true;
}

bool AddedTokenMatcher::any_lstrip() const {
  return std::any_of(tokens_.begin(), tokens_.end(),
                     [](const AddedToken& token) { return token.lstrip; });
}

bool AddedTokenMatcher::any_rstrip() const {
  return std::any_of(tokens_.begin(), tokens_.end(),
                     [](const AddedToken& token) { return token.rstrip; });
}

bool AddedTokenMatcher::any_contains(char byte) const {
  return std::any_of(tokens_.begin(), tokens_.end(), [&](const AddedToken& token) {
    return token.content.find(byte) != std::string::npos;
  });
}

const AddedToken* AddedTokenMatcher::match_at(std::string_view text, size_t pos) const {
  // Invariant: tokens_[lo, hi) are the tokens whose content starts with text[pos, pos + depth).
  // They are sorted, so those whose next byte is text[pos + depth] are one run, and those that
  // end at depth + 1 bytes open it.
  size_t lo = 0;
  size_t hi = tokens_.size();
  const AddedToken* longest = nullptr;
  for (size_t depth = 0; pos + depth < text.size() && lo < hi; ++depth) {
    const int next = static_cast<uint8_t>(text[pos + depth]);
    const auto byte_at = [depth](const AddedToken& token) {
      return token.content.size() > depth
                 ? static_cast<int>(static_cast<uint8_t>(token.content[depth]))
                 : -1;
    };
    const auto first = tokens_.begin() + static_cast<long>(lo);
    const auto last = tokens_.begin() + static_cast<long>(hi);
    const auto run_begin =
        std::partition_point(first, last, [&](const AddedToken& t) { return byte_at(t) < next; });
    const auto run_end = std::partition_point(
        run_begin, last, [&](const AddedToken& t) { return byte_at(t) == next; });
    lo = static_cast<size_t>(run_begin - tokens_.begin());
    hi = static_cast<size_t>(run_end - tokens_.begin());
    if (lo < hi && tokens_[lo].content.size() == depth + 1) longest = &tokens_[lo];
  }
  return longest;
}

bool AddedTokenMatcher::keeps(const AddedToken& token, std::string_view text, size_t begin,
                              size_t end) {
  if (token.as_text) return false;
  if (!token.single_word) return true;
  return !(begin > 0 && is_word_character(code_point_before(text, begin))) &&
         !(end < text.size() && is_word_character(unicode::decode_utf8(text, end).code_point));
}

void AddedTokenMatcher::split(std::string_view text, std::vector<Section>& sections) const {
  sections.clear();
  size_t done = 0;  // end of the last section
  for (size_t pos = 0; pos < text.size(); ++pos) {
    if (!first_byte_[static_cast<uint8_t>(text[pos])]) continue;
    const AddedToken* token = match_at(text, pos);
    if (token == nullptr) continue;
    size_t begin = pos;
    size_t end = pos + token->content.size();
    if (!keeps(*token, text, begin, end)) {
      pos = end - 1;  // dropped: its text stays text, and matching resumes after it
      continue;
    }
    if (token->lstrip) begin = whitespace_start(text, begin, done);
    if (token->rstrip) end = whitespace_end(text, end);
    if (begin > done) sections.push_back({-1, done, begin});
    sections.push_back({token->id, begin, end});
    done = end;
    pos = end - 1;
  }
  if (done < text.size()) sections.push_back({-1, done, text.size()});
}

}  // namespace autotrain::data
