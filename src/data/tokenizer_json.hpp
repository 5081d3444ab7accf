#pragma once
// Reading the parts of a Hugging Face tokenizer.json: small typed accessors whose errors name
// the file and the JSON path of the value ("tokenizer.json: pre_tokenizer.pretokenizers[1]:
// ..."), and the one error for a component autotrain does not implement.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "autotrain/core/error.hpp"

namespace autotrain::data::tokenizer_json {

using Json = nlohmann::json;

// "where.key" / "where[index]": the JSON path of a member, for errors.
inline std::string path(const std::string& where, const std::string& key) {
  return cat(where, ".", key);
}
inline std::string path(const std::string& where, size_t index) {
  return cat(where, "[", index, "]");
}

const Json& member(const Json& object, const char* key, const std::string& where);
std::string string_member(const Json& object, const char* key, const std::string& where);
// A member that may be absent or null.
std::optional<std::string> optional_string(const Json& object, const char* key,
                                           const std::string& where);
bool bool_member(const Json& object, const char* key, bool fallback, const std::string& where);
int int_member(const Json& object, const char* key, int fallback, const std::string& where);
// The "type" of a component object.
std::string type_of(const Json& component, const std::string& where);

// `kind` is "normalizer", "pre-tokenizer", ...; `supported` lists what is implemented.
[[noreturn]] void unsupported(const std::string& where, const char* kind, const std::string& type,
                              const char* supported);

}  // namespace autotrain::data::tokenizer_json
