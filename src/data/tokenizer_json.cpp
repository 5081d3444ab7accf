#include "tokenizer_json.hpp"

namespace autotrain::data::tokenizer_json {

const Json& member(const Json& object, const char* key, const std::string& where) {
  AT_CHECK(object.is_object(), where, ": expected a JSON object, got ", object.type_name());
  const auto it = object.find(key);
  AT_CHECK(it != object.end(), where, ": missing '", key, "'");
  return *it;
}

std::string string_member(const Json& object, const char* key, const std::string& where) {
  const Json& value = member(object, key, where);
  AT_CHECK(value.is_string(), path(where, key), ": expected a string, got ", value.type_name());
  return value.get<std::string>();
}

std::optional<std::string> optional_string(const Json& object, const char* key,
                                           const std::string& where) {
  if (!object.is_object()) return {};
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return {};
  AT_CHECK(it->is_string(), path(where, key), ": expected a string or null, got ", it->type_name());
  return it->get<std::string>();
}

bool bool_member(const Json& object, const char* key, bool fallback, const std::string& where) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return fallback;
  AT_CHECK(it->is_boolean(), path(where, key), ": expected true or false, got ", it->dump());
  return it->get<bool>();
}

int int_member(const Json& object, const char* key, int fallback, const std::string& where) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return fallback;
  AT_CHECK(it->is_number_integer() && it->get<int64_t>() >= 0 && it->get<int64_t>() <= INT32_MAX,
           path(where, key), ": expected a non-negative integer, got ", it->dump());
  return it->get<int>();
}

std::string type_of(const Json& component, const std::string& where) {
  return string_member(component, "type", where);
}

void unsupported(const std::string& where, const char* kind, const std::string& type,
                 const char* supported) {
  throw Error(cat(where, ": ", kind, " type '", type, "' is not supported by autotrain (", kind,
                  "s it implements: ", supported, ")"));
}

}  // namespace autotrain::data::tokenizer_json
