#pragma once
// Python's str methods on UTF-8 text, as chat templates call them (strip, split, replace, ...).
// Python counts and indexes characters, so these work on code points; whitespace is Python's
// str.isspace() (Unicode White_Space and the four separators U+001C..U+001F).
//
// Case mapping (upper, lower, title, capitalize) is ASCII's: text with a non-ASCII letter is a
// Failure rather than a rendering that differs from Python's Unicode tables.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace autotrain::data::jinja {

bool is_python_space(uint32_t code_point);

// The byte offset of every code point of `text`, then text.size().
std::vector<size_t> code_point_offsets(std::string_view text);
size_t count_code_points(std::string_view text);

// str.strip / lstrip / rstrip: `chars` absent strips whitespace.
std::string strip(std::string_view text, const std::optional<std::string>& chars, bool left,
                  bool right);
// str.split / rsplit: `separator` absent splits at runs of whitespace; `max_split` < 0 is no
// limit. An empty separator is a Failure, as in Python.
std::vector<std::string> split(std::string_view text, const std::optional<std::string>& separator,
                               int64_t max_split, bool from_right);
// str.replace with Python's count (< 0: every occurrence; an empty `from` inserts between
// characters).
std::string replace(std::string_view text, std::string_view from, std::string_view to,
                    int64_t count);
// str.find / str.count, in characters.
int64_t find(std::string_view text, std::string_view needle);
int64_t count(std::string_view text, std::string_view needle);

std::string upper(std::string_view text);
std::string lower(std::string_view text);
std::string title(std::string_view text);       // Python's str.title()
std::string capitalize(std::string_view text);  // first character upper, the rest lower
// jinja2's title filter (not str.title()): each word's first character upper, the rest lower,
// words starting after '-', '(', '{', '[', '<' or whitespace.
std::string title_words(std::string_view text);
// str.islower() / str.isupper(): some cased character, and none of the other case.
bool is_lower(std::string_view text);
bool is_upper(std::string_view text);

// Python's repr() of a str: quotes chosen as Python chooses them, control and separator
// characters escaped.
std::string string_repr(std::string_view text);

// jinja2's indent filter.
std::string indent(std::string_view text, std::string_view prefix, bool first, bool blank);

}  // namespace autotrain::data::jinja
