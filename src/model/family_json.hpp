#pragma once
// Reading a Hugging Face config.json for a family: typed keys whose errors name the file, the key
// and the value found.
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace autotrain::model {

class HfConfig {
 public:
  HfConfig(const nlohmann::json& json, std::string file) : json_(json), file_(std::move(file)) {}

  bool has(const char* key) const { return json_.contains(key) && !json_[key].is_null(); }
  // A positive integer; the key must be there.
  int integer(const char* key) const;
  int integer_or(const char* key, int fallback) const { return has(key) ? integer(key) : fallback; }
  double number_or(const char* key, double fallback) const;
  bool bool_or(const char* key, bool fallback) const;
  std::string string_or(const char* key, std::string fallback) const;
  // `architectures`, when present, lists `name`.
  void expect_architecture(std::string_view name) const;
  // When present, the key holds one of `values` / `value`; otherwise "not supported".
  void expect_one_of(const char* key, std::initializer_list<std::string_view> values) const;
  void expect_number(const char* key, double value) const;
  void expect_bool(const char* key, bool value) const;
  [[noreturn]] void unsupported(const char* key, std::string_view expected) const;

  const nlohmann::json& json() const { return json_; }
  const std::string& file() const { return file_; }

 private:
  const nlohmann::json& json_;
  std::string file_;
};

}  // namespace autotrain::model
