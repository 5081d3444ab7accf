#pragma once
// Python's operators on Values as jinja2 applies them (what they build is charged to the render's
// budget, budget.hpp, before it is built): arithmetic (+ - * / // % **), ~,
// comparisons, `in`, len(), iteration, and the attribute / subscript / slice lookups of
// jinja2's sandboxed environment (`a.b` tries the attribute, then the item; `a['b']` the item,
// then the attribute; a miss is Undefined with jinja2's hint). Errors are Failures worded as
// Python's.
#include <optional>
#include <string>
#include <string_view>

#include "value.hpp"

namespace autotrain::data::jinja {

enum class BinaryOp { add, subtract, multiply, divide, floor_divide, modulo, power, concat };
enum class CompareOp { equal, not_equal, less, less_equal, greater, greater_equal, in, not_in };

const char* symbol(BinaryOp op);
const char* symbol(CompareOp op);

Value binary(BinaryOp op, const Value& left, const Value& right);
bool compare(CompareOp op, const Value& left, const Value& right);
Value negate(const Value& operand, bool minus);

// Python's `needle in haystack`.
bool contains(const Value& haystack, const Value& needle);
// len(); a Failure for values without one.
int64_t length(const Value& value);
// The items `for x in value` visits: a list's or tuple's items, a dict's keys, a string's
// characters; none for undefined (jinja2's Undefined iterates as empty).
List iterate(const Value& value);

// `object.name` and `object[key]`.
Value get_attribute(const Value& object, const std::string& name);
Value get_item(const Value& object, const Value& key);
// object[start:stop:step] on a string, list or tuple; absent bounds are std::nullopt.
Value slice(const Value& object, std::optional<int64_t> start, std::optional<int64_t> stop,
            std::optional<int64_t> step);

// Python's TypeError for a dict key or set member that cannot be hashed (a list, a dict).
void require_hashable(const Value& value);

// Raises the Failure an undefined value carries (for uses that jinja2's Undefined refuses).
[[noreturn]] void fail_undefined(const Value& undefined);

}  // namespace autotrain::data::jinja
