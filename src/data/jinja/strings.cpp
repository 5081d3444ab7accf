#include "strings.hpp"

#include <algorithm>
#include <cstdio>

#include "autotrain/core/error.hpp"
#include "autotrain/core/utf8.hpp"
#include "autotrain/data/unicode.hpp"
#include "budget.hpp"
#include "value.hpp"

namespace autotrain::data::jinja {
namespace {

// The code points of `text`, for set membership (strip's chars).
std::vector<uint32_t> decode_all(std::string_view text) {
  spend_bytes(saturating_product(text.size(), sizeof(uint32_t)));
  spend_scan(text.size());
  std::vector<uint32_t> code_points;
  for (size_t pos = 0; pos < text.size();) {
    const utf8::Decoded d = utf8::decode_utf8(text, pos);
    code_points.push_back(d.code_point);
    pos += d.length;
  }
  return code_points;
}

bool is_ascii_letter(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

// Case mapping is ASCII's; a non-ASCII letter would be mapped by Python's Unicode tables.
void require_ascii_case(std::string_view text, const char* method) {
  for (size_t pos = 0; pos < text.size();) {
    const utf8::Decoded d = utf8::decode_utf8(text, pos);
    if (d.code_point >= 0x80 && unicode::is_letter(d.code_point))
      throw Failure(cat(method,
                        "() of text with non-ASCII letters is not supported (case mapping "
                        "is ASCII only)"));
    pos += d.length;
  }
}

char ascii_upper(char c) {
  return (c >= 'a' && c <= 'z') ? static_cast<char>(c - 32) : c;
}
char ascii_lower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c;
}

// Characters Python's repr() escapes beyond ASCII: C1 controls, separators (Zs, Zl, Zp), format
// characters and private use (unassigned code points are taken as printable).
bool is_unprintable(uint32_t c) {
  return c <= 0xA0 || c == 0xAD || (c >= 0x600 && c <= 0x605) || c == 0x61C || c == 0x6DD ||
         c == 0x70F || c == 0x1680 || c == 0x180E || (c >= 0x2000 && c <= 0x200F) ||
         (c >= 0x2028 && c <= 0x202F) || (c >= 0x205F && c <= 0x206F) || c == 0x3000 ||
         (c >= 0xD800 && c <= 0xF8FF) || c == 0xFEFF || (c >= 0xFFF9 && c <= 0xFFFB) ||
         c >= 0xF0000 || (c >= 0xE0000 && c <= 0xE007F);
}

}  // namespace

bool is_python_space(uint32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
         c == 0x205F || c == 0x3000;
}

std::vector<size_t> code_point_offsets(std::string_view text) {
  spend_bytes(saturating_product(text.size() + 1, sizeof(size_t)));
  spend_scan(text.size());
  std::vector<size_t> offsets;
  offsets.reserve(text.size() + 1);
  for (size_t pos = 0; pos < text.size();) {
    offsets.push_back(pos);
    pos += utf8::decode_utf8(text, pos).length;
  }
  offsets.push_back(text.size());
  return offsets;
}

size_t count_code_points(std::string_view text) {
  size_t n = 0;
  for (const char c : text) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

std::string strip(std::string_view text, const std::optional<std::string>& chars, bool left,
                  bool right) {
  const std::vector<uint32_t> set = chars ? decode_all(*chars) : std::vector<uint32_t>{};
  auto strippable = [&](uint32_t c) {
    return chars ? std::find(set.begin(), set.end(), c) != set.end() : is_python_space(c);
  };
  const std::vector<size_t> at = code_point_offsets(text);
  size_t first = 0, last = at.size() - 1;  // code point indices [first, last)
  auto code_point = [&](size_t i) { return utf8::decode_utf8(text, at[i]).code_point; };
  while (left && first < last && strippable(code_point(first))) ++first;
  while (right && last > first && strippable(code_point(last - 1))) --last;
  return std::string(text.substr(at[first], at[last] - at[first]));
}

namespace {

// What each part of a split costs beyond its text: its place in the list, its string, its
// position while splitting.
constexpr size_t kPartBytes = 2 * sizeof(std::string) + 2 * sizeof(size_t);

std::vector<std::string> split_whitespace(std::string_view text, int64_t max_split,
                                          bool from_right) {
  // Words as [begin, end) byte ranges, in text order.
  std::vector<std::pair<size_t, size_t>> words;
  spend_scan(text.size());
  size_t begin = std::string_view::npos;
  for (size_t pos = 0; pos <= text.size();) {
    const utf8::Decoded d =
        pos < text.size() ? utf8::decode_utf8(text, pos) : utf8::Decoded{' ', 1};
    if (is_python_space(d.code_point)) {
      if (begin != std::string_view::npos) {
        spend_bytes(kPartBytes);
        words.emplace_back(begin, pos);
      }
      begin = std::string_view::npos;
    } else if (begin == std::string_view::npos) {
      begin = pos;
    }
    pos += d.length;
  }
  if (max_split < 0 || static_cast<size_t>(max_split) >= words.size()) {
    std::vector<std::string> parts;
    for (const auto& [b, e] : words) parts.emplace_back(text.substr(b, e - b));
    return parts;
  }
  // Python keeps the rest of the text (stripped on its outer side) as the last part.
  std::vector<std::string> parts;
  const size_t n = static_cast<size_t>(max_split);
  if (!from_right) {
    for (size_t i = 0; i < n; ++i)
      parts.emplace_back(text.substr(words[i].first, words[i].second - words[i].first));
    parts.emplace_back(text.substr(words[n].first, words.back().second - words[n].first));
    return parts;
  }
  const size_t keep = words.size() - n;
  parts.emplace_back(text.substr(words[0].first, words[keep - 1].second - words[0].first));
  for (size_t i = keep; i < words.size(); ++i)
    parts.emplace_back(text.substr(words[i].first, words[i].second - words[i].first));
  return parts;
}

}  // namespace

std::vector<std::string> split(std::string_view text, const std::optional<std::string>& separator,
                               int64_t max_split, bool from_right) {
  if (!separator) return split_whitespace(text, max_split, from_right);
  const std::string& sep = *separator;
  if (sep.empty()) throw Failure("empty separator");
  // Separator positions, then the parts between the first (or last) max_split of them.
  std::vector<size_t> hits;
  spend_scan(text.size());
  for (size_t pos = text.find(sep); pos != std::string_view::npos;
       pos = text.find(sep, pos + sep.size())) {
    spend_bytes(kPartBytes);
    hits.push_back(pos);
  }
  if (max_split >= 0 && hits.size() > static_cast<size_t>(max_split)) {
    if (from_right) {
      // rsplit matches from the right: re-find right to left so overlaps resolve as Python does.
      hits.clear();
      for (size_t end = text.size(); hits.size() < static_cast<size_t>(max_split);) {
        if (end < sep.size()) break;
        const size_t pos = text.rfind(sep, end - sep.size());
        if (pos == std::string_view::npos) break;
        hits.insert(hits.begin(), pos);
        end = pos;
      }
    } else {
      hits.resize(static_cast<size_t>(max_split));
    }
  }
  std::vector<std::string> parts;
  size_t begin = 0;
  for (const size_t pos : hits) {
    parts.emplace_back(text.substr(begin, pos - begin));
    begin = pos + sep.size();
  }
  parts.emplace_back(text.substr(begin));
  return parts;
}

std::string replace(std::string_view text, std::string_view from, std::string_view to,
                    int64_t count) {
  std::string out;
  int64_t done = 0;
  auto more = [&] { return count < 0 || done < count; };
  // Checked before each piece is appended: a replacement that multiplies the text stops at the
  // budget, not at the machine's memory.
  auto append = [&](std::string_view piece) {
    check_bytes(out.size() + piece.size());
    out += piece;
  };
  spend_scan(text.size());
  if (from.empty()) {
    // Python inserts `to` before every character and at the end.
    const std::vector<size_t> at = code_point_offsets(text);
    for (size_t i = 0; i + 1 < at.size(); ++i) {
      if (more()) append(to), ++done;
      append(text.substr(at[i], at[i + 1] - at[i]));
    }
    if (more()) append(to);
    return out;
  }
  size_t begin = 0;
  for (size_t pos = text.find(from); pos != std::string_view::npos && more();
       pos = text.find(from, begin), ++done) {
    append(text.substr(begin, pos - begin));
    append(to);
    begin = pos + from.size();
  }
  append(text.substr(begin));
  return out;
}

int64_t find(std::string_view text, std::string_view needle) {
  spend_scan(text.size());
  const size_t pos = text.find(needle);
  if (pos == std::string_view::npos) return -1;
  return static_cast<int64_t>(count_code_points(text.substr(0, pos)));
}

int64_t count(std::string_view text, std::string_view needle) {
  spend_scan(text.size());
  if (needle.empty()) return static_cast<int64_t>(count_code_points(text)) + 1;
  int64_t n = 0;
  for (size_t pos = text.find(needle); pos != std::string_view::npos;
       pos = text.find(needle, pos + needle.size()))
    ++n;
  return n;
}

std::string upper(std::string_view text) {
  require_ascii_case(text, "upper");
  std::string out(text);
  for (char& c : out) c = ascii_upper(c);
  return out;
}

std::string lower(std::string_view text) {
  require_ascii_case(text, "lower");
  std::string out(text);
  for (char& c : out) c = ascii_lower(c);
  return out;
}

std::string title(std::string_view text) {
  require_ascii_case(text, "title");
  std::string out(text);
  bool previous_is_cased = false;
  for (char& c : out) {
    c = previous_is_cased ? ascii_lower(c) : ascii_upper(c);
    previous_is_cased = is_ascii_letter(static_cast<unsigned char>(c));
  }
  return out;
}

std::string capitalize(std::string_view text) {
  require_ascii_case(text, "capitalize");
  std::string out(text);
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = i == 0 ? ascii_upper(out[i]) : ascii_lower(out[i]);
  return out;
}

std::string title_words(std::string_view text) {
  require_ascii_case(text, "title");
  std::string out;
  bool word_start = true;
  for (size_t pos = 0; pos < text.size();) {
    const utf8::Decoded d = utf8::decode_utf8(text, pos);
    const uint32_t c = d.code_point;
    const bool separator =
        is_python_space(c) || c == '-' || c == '(' || c == '{' || c == '[' || c == '<';
    if (d.length == 1 && !separator) {
      out += word_start ? ascii_upper(text[pos]) : ascii_lower(text[pos]);
    } else {
      out.append(text, pos, d.length);
    }
    word_start = separator;
    pos += d.length;
  }
  return out;
}

bool is_lower(std::string_view text) {
  require_ascii_case(text, "islower");
  bool cased = false;
  for (const char c : text) {
    if (c >= 'A' && c <= 'Z') return false;
    cased = cased || (c >= 'a' && c <= 'z');
  }
  return cased;
}

bool is_upper(std::string_view text) {
  require_ascii_case(text, "isupper");
  bool cased = false;
  for (const char c : text) {
    if (c >= 'a' && c <= 'z') return false;
    cased = cased || (c >= 'A' && c <= 'Z');
  }
  return cased;
}

std::string string_repr(std::string_view text) {
  const bool has_single = text.find('\'') != std::string_view::npos;
  const bool has_double = text.find('"') != std::string_view::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (size_t pos = 0; pos < text.size();) {
    const utf8::Decoded d = utf8::decode_utf8(text, pos);
    const uint32_t c = d.code_point;
    char escape[16];
    if (c == static_cast<uint32_t>(quote) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\t' || c == '\n' || c == '\r') {
      out += c == '\t' ? "\\t" : c == '\n' ? "\\n" : "\\r";
    } else if (c < 0x20 || c == 0x7F || (c >= 0x80 && is_unprintable(c))) {
      std::snprintf(escape, sizeof(escape),
                    c <= 0xFF     ? "\\x%02x"
                    : c <= 0xFFFF ? "\\u%04x"
                                  : "\\U%08x",
                    c);
      out += escape;
    } else {
      out += text.substr(pos, d.length);
    }
    pos += d.length;
  }
  out += quote;
  return out;
}

std::string indent(std::string_view text, std::string_view prefix, bool first, bool blank) {
  // jinja2's do_indent: lines of text + "\n" (str.splitlines, at "\n" only here), joined again
  // with the prefix before every line but the first, and before empty lines only with `blank`.
  const std::string with_newline = std::string(text) + "\n";
  std::vector<std::string> lines = split(with_newline, std::string("\n"), -1, false);
  lines.pop_back();
  std::string out = first ? std::string(prefix) : std::string();
  for (size_t i = 0; i < lines.size(); ++i) {
    const bool prefixed = i > 0 && (blank || !lines[i].empty());
    check_bytes(out.size() + 1 + (prefixed ? prefix.size() : 0) + lines[i].size());
    if (i > 0) out += '\n';
    if (prefixed) out += prefix;
    out += lines[i];
  }
  return out;
}

}  // namespace autotrain::data::jinja
