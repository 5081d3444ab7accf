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
  std::stable_sort(tokens_.begin(), tokens_.end(), [](const AddedToken& a, const AddedToken& b) {
    return a.content.size() > b.content.size();
  });
  for (const auto& token : tokens_) first_byte_[static_cast<uint8_t>(token.content[0])] = true;
}

bool AddedTokenMatcher::any_lstrip() const {
  return std::any_of(tokens_.begin(), tokens_.end(),
                     [](const AddedToken& token) { return token.lstrip; });
}

const AddedToken* AddedTokenMatcher::match_at(std::string_view text, size_t pos) const {
  for (const auto& candidate : tokens_) {
    if (text.compare(pos, candidate.content.size(), candidate.content) == 0) return &candidate;
  }
  return nullptr;
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
