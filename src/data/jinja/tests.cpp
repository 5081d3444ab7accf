// jinja2's tests (`x is defined`, `x is not none`, `select('equalto', 1)`), with Python's types:
// a bool is a number (but not an integer), and jinja2's Undefined is iterable and a sequence.
#include <cctype>

#include "autotrain/core/error.hpp"
#include "builtins.hpp"
#include "operators.hpp"
#include "strings.hpp"

namespace autotrain::data::jinja {
namespace {

using Test = bool (*)(const Value& value, const CallArgs& args);

template <Kind... kinds>
bool is_kind(const Value& value, const CallArgs& args) {
  const Bound none("test", args, {});
  return (value.is(kinds) || ...);
}

bool is_defined(const Value& v, const CallArgs& a) {
  return !is_kind<Kind::undefined>(v, a);
}
bool is_number(const Value& v, const CallArgs& a) {
  return is_kind<Kind::integer, Kind::floating, Kind::boolean>(v, a);
}
bool is_true(const Value& v, const CallArgs& a) {
  return is_kind<Kind::boolean>(v, a) && v.as_bool();
}
bool is_false(const Value& v, const CallArgs& a) {
  return is_kind<Kind::boolean>(v, a) && !v.as_bool();
}
bool is_iterable(const Value& v, const CallArgs& a) {
  return is_kind<Kind::undefined, Kind::string, Kind::list, Kind::tuple, Kind::dict, Kind::loop>(v,
                                                                                                 a);
}
bool is_sequence(const Value& v, const CallArgs& a) {
  return is_kind<Kind::undefined, Kind::string, Kind::list, Kind::tuple, Kind::dict>(v, a);
}
bool is_escaped(const Value&, const CallArgs& a) {
  const Bound none("escaped", a, {});
  return false;
}

bool remainder_is(const Value& value, const Value& divisor, int64_t expected) {
  return equals(binary(BinaryOp::modulo, value, divisor), Value::integer(expected));
}
bool is_odd(const Value& v, const CallArgs& a) {
  const Bound none("odd", a, {});
  return remainder_is(v, Value::integer(2), 1);
}
bool is_even(const Value& v, const CallArgs& a) {
  const Bound none("even", a, {});
  return remainder_is(v, Value::integer(2), 0);
}

// The test's one required argument.
const Value& other(const char* test, const CallArgs& args, const char* parameter) {
  if (args.positional.size() + args.keyword.size() != 1)
    throw Failure(cat(test, "() takes exactly one argument (", parameter, ")"));
  return args.positional.empty() ? args.keyword[0].second : args.positional[0];
}

bool is_divisible(const Value& v, const CallArgs& a) {
  return remainder_is(v, other("divisibleby", a, "num"), 0);
}

template <CompareOp op>
bool compares(const Value& v, const CallArgs& a) {
  return compare(op, v, other(symbol(op), a, "other"));
}

bool is_in(const Value& v, const CallArgs& a) {
  return contains(other("in", a, "seq"), v);
}

// Python's `is`: equal scalars (None, True, small ints, ...) and the same container.
bool is_same(const Value& v, const CallArgs& a) {
  const Value& o = other("sameas", a, "other");
  if (v.kind() != o.kind()) return false;
  if (v.is_sequence()) return v.items_ptr() == o.items_ptr();
  if (v.is(Kind::dict)) return &v.as_dict() == &o.as_dict();
  return equals(v, o);
}

bool is_lower_text(const Value& v, const CallArgs& a) {
  const Bound none("lower", a, {});
  return is_lower(to_str(v));
}
bool is_upper_text(const Value& v, const CallArgs& a) {
  const Bound none("upper", a, {});
  return is_upper(to_str(v));
}

struct NamedTest {
  const char* name;
  Test test;
};

constexpr NamedTest kTests[] = {
    {"boolean", is_kind<Kind::boolean>},
    {"callable", is_kind<Kind::callable>},
    {"defined", is_defined},
    {"divisibleby", is_divisible},
    {"eq", compares<CompareOp::equal>},
    {"equalto", compares<CompareOp::equal>},
    {"==", compares<CompareOp::equal>},
    {"escaped", is_escaped},
    {"even", is_even},
    {"false", is_false},
    {"float", is_kind<Kind::floating>},
    {"ge", compares<CompareOp::greater_equal>},
    {">=", compares<CompareOp::greater_equal>},
    {"gt", compares<CompareOp::greater>},
    {"greaterthan", compares<CompareOp::greater>},
    {">", compares<CompareOp::greater>},
    {"in", is_in},
    {"integer", is_kind<Kind::integer>},
    {"iterable", is_iterable},
    {"le", compares<CompareOp::less_equal>},
    {"<=", compares<CompareOp::less_equal>},
    {"lower", is_lower_text},
    {"lt", compares<CompareOp::less>},
    {"lessthan", compares<CompareOp::less>},
    {"<", compares<CompareOp::less>},
    {"mapping", is_kind<Kind::dict>},
    {"ne", compares<CompareOp::not_equal>},
    {"!=", compares<CompareOp::not_equal>},
    {"none", is_kind<Kind::none>},
    {"number", is_number},
    {"odd", is_odd},
    {"sameas", is_same},
    {"sequence", is_sequence},
    {"string", is_kind<Kind::string>},
    {"true", is_true},
    {"undefined", is_kind<Kind::undefined>},
    {"upper", is_upper_text},
};

const NamedTest* find_test(std::string_view name) {
  for (const NamedTest& t : kTests)
    if (name == t.name) return &t;
  return nullptr;
}

}  // namespace

bool is_test(std::string_view name) {
  return find_test(name) != nullptr;
}

std::string test_names() {
  std::string out;
  for (const NamedTest& t : kTests)
    if (std::isalpha(static_cast<unsigned char>(t.name[0])))
      out += (out.empty() ? "" : ", ") + std::string(t.name);
  return out;
}

bool apply_test(std::string_view name, const Value& operand, const CallArgs& args) {
  const NamedTest* test = find_test(name);
  if (test == nullptr) throw Failure(cat("no test named '", name, "'"));
  return test->test(operand, args);
}

}  // namespace autotrain::data::jinja
