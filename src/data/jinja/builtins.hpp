#pragma once
// What templates call by name: filters (`x | trim`), tests (`x is defined`), methods
// (`s.split(',')`, `d.items()`) and global functions (range, namespace, dict, raise_exception,
// strftime_now), with jinja2's semantics. A name outside these lists is refused by the parser
// (filters, tests) or at the call (methods), naming what is supported.
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "value.hpp"

namespace autotrain::data::jinja {

struct CallArgs {
  List positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

// Python's binding of a call's arguments to named parameters; a Failure for too many
// arguments or an unknown keyword.
class Bound {
 public:
  Bound(std::string_view function, const CallArgs& args,
        std::initializer_list<std::string_view> parameters);
  // Parameter i, given positionally or by keyword, or nullptr.
  const Value* get(size_t i) const { return values_[i]; }
  bool has(size_t i) const { return values_[i] != nullptr && !values_[i]->is(Kind::none); }
  // Parameter i as a str / int / truthiness; absent or none gives the fallback, another type a
  // Failure.
  std::string string(size_t i, std::string fallback) const;
  std::optional<std::string> optional_string(size_t i) const;
  int64_t integer(size_t i, int64_t fallback) const;
  bool flag(size_t i, bool fallback) const;

 private:
  std::string function_;
  std::vector<std::string_view> parameters_;
  std::vector<const Value*> values_;
};

bool is_filter(std::string_view name);
bool is_test(std::string_view name);
std::string filter_names();  // "abs, capitalize, ...", for errors
std::string test_names();

Value apply_filter(std::string_view name, const Value& operand, const CallArgs& args);
bool apply_test(std::string_view name, const Value& operand, const CallArgs& args);

// The global functions, as Values a template can call.
bool is_global_function(std::string_view name);
// Calls a callable Value: a global function or a method bound to its receiver.
Value call(const Value& callable, const CallArgs& args);

// Looks up `path` ("a.b", "a.0") in `item` as jinja2's attribute filters do (key, then
// attribute); a miss is undefined.
Value attribute_path(const Value& item, const std::string& path);

}  // namespace autotrain::data::jinja
