#pragma once
// Small string utilities shared by the CLI and the configuration.
#include <string>
#include <string_view>
#include <vector>

namespace autotrain {

// Levenshtein distance, for did-you-mean suggestions.
size_t edit_distance(std::string_view a, std::string_view b);

// The closest candidate to `name` when it is close enough to be a plausible typo, else "".
// Dashes and underscores count as the same character.
std::string closest_match(std::string_view name, const std::vector<std::string>& candidates);

// " (did you mean 'x'?)" or "" — ready to append to an error message.
std::string did_you_mean(std::string_view name, const std::vector<std::string>& candidates);

std::string to_snake_case(std::string_view name);  // batch-size -> batch_size
std::string to_kebab_case(std::string_view name);  // batch_size -> batch-size

std::string join(const std::vector<std::string>& parts, std::string_view separator);
std::vector<std::string> split(std::string_view text, char separator);
std::string trim(std::string_view text);
// Every non-overlapping occurrence of `from` (not empty), left to right, replaced by `to`.
std::string replace_all(std::string_view text, std::string_view from, std::string_view to);

// `text` made safe to print inside a message that quotes input: control bytes, DEL and bytes
// that are not valid UTF-8 become \xNN (\n, \r and \t their usual escapes); printable ASCII,
// backslashes and valid multi-byte UTF-8 characters stay as they are. At most `max_bytes` of
// the text are shown, then "..." .
std::string escape_bytes(std::string_view text, size_t max_bytes = 200);

// `value` with `digits` digits after the point ("%.*f").
std::string fixed_point(double value, int digits);

// "1.5 GiB", "512 B": sizes as people read them.
std::string human_bytes(double bytes);

}  // namespace autotrain
