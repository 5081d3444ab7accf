#pragma once
// JSON in and out of templates: the messages and variables a template receives, and
// transformers' tojson filter (Python's json.dumps with ensure_ascii=False by default).
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "value.hpp"

namespace autotrain::data::jinja {

// JSON null is none, objects are dicts in their order, integers int, other numbers float.
Value from_json(const nlohmann::ordered_json& json);

// The arguments of json.dumps that transformers' tojson passes on.
struct JsonFormat {
  std::optional<std::string> indent;  // json.dumps' indent as its string; nullopt: one line
  bool ensure_ascii = false;
  std::optional<std::pair<std::string, std::string>> separators;  // (item, key)
  bool sort_keys = false;
};

// json.dumps(value): a Failure for values JSON has no form for (undefined, namespace, ...).
std::string to_json(const Value& value, const JsonFormat& format);

}  // namespace autotrain::data::jinja
