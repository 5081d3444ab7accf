#pragma once
// Reading the parts of a Hugging Face tokenizer.json: small typed accessors whose errors name
// the file and the JSON path of the value ("tokenizer.json: pre_tokenizer.pretokenizers[1]:
// ..."), and the one error for a component autotrain does not implement.
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "autotrain/core/error.hpp"

namespace autotrain::data::tokenizer_json {

using Json = nlohmann::json;

// Token ids autotrain accepts: [0, 2^24), 16.7 million, over 60x the largest vocabularies in
// use, so a corrupt id is an error rather than a multi-gigabyte table.
constexpr int64_t kMaxTokenIds = int64_t{1} << 24;

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

// The components listed in `object[key]` (a Sequence's steps), each made by
// make(json, its path); null entries are dropped.
template <typename Component, typename Make>
std::vector<std::unique_ptr<Component>> component_list(const Json& object, const char* key,
                                                       const std::string& where, Make&& make) {
  const Json& list = member(object, key, where);
  AT_CHECK(list.is_array(), path(where, key), ": expected a list");
  std::vector<std::unique_ptr<Component>> components;
  for (size_t i = 0; i < list.size(); ++i) {
    if (auto component = make(list[i], path(path(where, key), i)))
      components.push_back(std::move(component));
  }
  return components;
}

// `kind` is "normalizer", "pre-tokenizer", ...; `supported` lists what is implemented.
[[noreturn]] void unsupported(const std::string& where, const char* kind, const std::string& type,
                              const char* supported);

}  // namespace autotrain::data::tokenizer_json
