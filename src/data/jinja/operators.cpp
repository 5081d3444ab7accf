#include "operators.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include "autotrain/core/error.hpp"
#include "budget.hpp"
#include "strings.hpp"

namespace autotrain::data::jinja {
namespace {

// The methods chat templates call, per receiver type; other methods Python has are named in an
// error, since treating them as undefined would render differently from Python.
constexpr std::array kStringMethods = {
    "startswith", "endswith", "strip",   "lstrip",       "rstrip",      "split", "rsplit",
    "upper",      "lower",    "title",   "capitalize",   "replace",     "join",  "find",
    "count",      "islower",  "isupper", "removeprefix", "removesuffix"};
constexpr std::array kOtherStringMethods = {
    "casefold",    "center",  "encode",     "expandtabs", "format",    "format_map",   "index",
    "isalnum",     "isalpha", "isascii",    "isdecimal",  "isdigit",   "isidentifier", "isnumeric",
    "isprintable", "isspace", "istitle",    "ljust",      "maketrans", "partition",    "rfind",
    "rindex",      "rjust",   "rpartition", "splitlines", "swapcase",  "translate",    "zfill"};
constexpr std::array kDictMethods = {"items", "keys", "values", "get"};
constexpr std::array kOtherDictMethods = {"clear",   "copy",       "fromkeys", "pop",
                                          "popitem", "setdefault", "update"};

template <size_t N>
bool listed(const std::array<const char*, N>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

template <size_t N>
std::string joined(const std::array<const char*, N>& names) {
  std::string out;
  for (const char* name : names) out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

int64_t as_index(const Value& v) {
  return v.is(Kind::boolean) ? v.as_bool() : v.as_int();
}
bool is_int_like(const Value& v) {
  return v.is(Kind::integer) || v.is(Kind::boolean);
}

[[noreturn]] void unsupported_operands(const char* op, const Value& a, const Value& b) {
  throw Failure(cat("unsupported operand type(s) for ", op, ": '", type_name(a), "' and '",
                    type_name(b), "'"));
}

[[noreturn]] void overflow() {
  throw Failure("integer overflow (results beyond 64 bits are not supported)");
}

// a + b, a - b, a * b, or a Failure when the result does not fit 64 bits.
int64_t checked(BinaryOp op, int64_t a, int64_t b) {
  int64_t r = 0;
  const bool overflowed = op == BinaryOp::add        ? __builtin_add_overflow(a, b, &r)
                          : op == BinaryOp::subtract ? __builtin_sub_overflow(a, b, &r)
                                                     : __builtin_mul_overflow(a, b, &r);
  if (overflowed) overflow();
  return r;
}

// The size is checked against the budget before anything is built: `'a' * 10**18` is an error at
// once and `'' * 10**18` is '' at once, neither a loop that never ends.
Value repeat(const Value& sequence, int64_t times) {
  const size_t count = static_cast<size_t>(std::max<int64_t>(times, 0));
  if (sequence.is(Kind::string)) {
    const std::string& s = sequence.as_string();
    if (s.empty()) return Value::string("");
    const size_t bytes = saturating_product(s.size(), count);
    check_bytes(bytes);
    std::string out;
    out.reserve(bytes);
    for (size_t i = 0; i < count; ++i) out += s;
    return Value::string(std::move(out));
  }
  const List& items = sequence.items();
  const size_t total = saturating_product(items.size(), count);
  check_bytes(saturating_product(total, sizeof(Value)));
  spend_operations(static_cast<int64_t>(total));
  List out;
  out.reserve(total);
  for (size_t i = 0; i < count && !items.empty(); ++i)
    out.insert(out.end(), items.begin(), items.end());
  return sequence.is(Kind::tuple) ? Value::tuple(std::move(out)) : Value::list(std::move(out));
}

Value add(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is(Kind::floating) || b.is(Kind::floating))
      return Value::floating(a.as_number() + b.as_number());
    return Value::integer(checked(BinaryOp::add, as_index(a), as_index(b)));
  }
  if (a.kind() == b.kind() && a.is(Kind::string)) {
    check_bytes(a.as_string().size() + b.as_string().size());
    return Value::string(a.as_string() + b.as_string());
  }
  if (a.kind() == b.kind() && a.is_sequence()) {
    const size_t total = a.items().size() + b.items().size();
    check_bytes(saturating_product(total, sizeof(Value)));
    spend_operations(static_cast<int64_t>(total));
    List items;
    items.reserve(total);
    items.insert(items.end(), a.items().begin(), a.items().end());
    items.insert(items.end(), b.items().begin(), b.items().end());
    return a.is(Kind::tuple) ? Value::tuple(std::move(items)) : Value::list(std::move(items));
  }
  if (a.is(Kind::string) || a.is_sequence())
    throw Failure(cat("can only concatenate ", type_name(a), " (not \"", type_name(b), "\") to ",
                      type_name(a)));
  unsupported_operands("+", a, b);
}

Value multiply(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is(Kind::floating) || b.is(Kind::floating))
      return Value::floating(a.as_number() * b.as_number());
    return Value::integer(checked(BinaryOp::multiply, as_index(a), as_index(b)));
  }
  if ((a.is(Kind::string) || a.is_sequence()) && is_int_like(b)) return repeat(a, as_index(b));
  if ((b.is(Kind::string) || b.is_sequence()) && is_int_like(a)) return repeat(b, as_index(a));
  unsupported_operands("*", a, b);
}

Value floor_divide(const Value& a, const Value& b) {
  if (a.is(Kind::floating) || b.is(Kind::floating)) {
    if (b.as_number() == 0) throw Failure("float floor division by zero");
    return Value::floating(std::floor(a.as_number() / b.as_number()));
  }
  const int64_t x = as_index(a), y = as_index(b);
  if (y == 0) throw Failure("integer division or modulo by zero");
  if (x == INT64_MIN && y == -1) overflow();
  const int64_t q = x / y;
  return Value::integer((x % y != 0 && ((x < 0) != (y < 0))) ? q - 1 : q);
}

Value modulo(const Value& a, const Value& b) {
  if (a.is(Kind::floating) || b.is(Kind::floating)) {
    if (b.as_number() == 0) throw Failure("float modulo");
    const double r = std::fmod(a.as_number(), b.as_number());
    return Value::floating(r != 0 && ((r < 0) != (b.as_number() < 0)) ? r + b.as_number() : r);
  }
  const int64_t x = as_index(a), y = as_index(b);
  if (y == 0) throw Failure("integer modulo by zero");
  if (y == -1) return Value::integer(0);
  const int64_t r = x % y;
  return Value::integer(r != 0 && ((r < 0) != (y < 0)) ? r + y : r);
}

Value power(const Value& a, const Value& b) {
  if (!a.is(Kind::floating) && !b.is(Kind::floating) && as_index(b) >= 0) {
    int64_t result = 1, base = as_index(a);
    for (int64_t e = as_index(b); e > 0; e >>= 1) {
      if (e & 1) result = checked(BinaryOp::multiply, result, base);
      if (e > 1) base = checked(BinaryOp::multiply, base, base);
    }
    return Value::integer(result);
  }
  if (a.as_number() == 0 && b.as_number() < 0)
    throw Failure("0.0 cannot be raised to a negative power");
  return Value::floating(std::pow(a.as_number(), b.as_number()));
}

Value arithmetic(BinaryOp op, const Value& a, const Value& b) {
  if (op == BinaryOp::add) return add(a, b);
  if (op == BinaryOp::multiply) return multiply(a, b);
  if (op == BinaryOp::modulo && a.is(Kind::string))
    throw Failure("string formatting with % is not supported");
  if (!a.is_number() || !b.is_number()) unsupported_operands(symbol(op), a, b);
  switch (op) {
    case BinaryOp::subtract: {
      if (a.is(Kind::floating) || b.is(Kind::floating))
        return Value::floating(a.as_number() - b.as_number());
      return Value::integer(checked(BinaryOp::subtract, as_index(a), as_index(b)));
    }
    case BinaryOp::divide:
      if (b.as_number() == 0) throw Failure("division by zero");
      return Value::floating(a.as_number() / b.as_number());
    case BinaryOp::floor_divide:
      return floor_divide(a, b);
    case BinaryOp::modulo:
      return modulo(a, b);
    default:
      return power(a, b);
  }
}

template <typename T>
bool holds(CompareOp op, const T& a, const T& b) {
  switch (op) {
    case CompareOp::less:
      return a < b;
    case CompareOp::less_equal:
      return a <= b;
    case CompareOp::greater:
      return a > b;
    default:
      return a >= b;
  }
}

// Python's a < b, a <= b, a > b, a >= b for the orderable pairs.
bool ordered(CompareOp op, const Value& a, const Value& b, int depth) {
  check_depth(depth);
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  if (is_int_like(a) && is_int_like(b)) return holds(op, as_index(a), as_index(b));
  if (a.is_number() && b.is_number()) return holds(op, a.as_number(), b.as_number());
  if (a.is(Kind::string) && b.is(Kind::string)) return holds(op, a.as_string(), b.as_string());
  if (a.is_sequence() && a.kind() == b.kind()) {
    const List &x = a.items(), &y = b.items();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i)
      if (!equals(x[i], y[i], depth + 1)) return ordered(op, x[i], y[i], depth + 1);
    return holds(op, x.size(), y.size());
  }
  throw Failure(cat("'", symbol(op), "' not supported between instances of '", type_name(a),
                    "' and '", type_name(b), "'"));
}

Value loop_attribute(const Value& loop, const std::string& name) {
  const LoopState& state = loop.as_loop();
  const int64_t index0 = static_cast<int64_t>(state.index0);
  const int64_t length = static_cast<int64_t>(state.items->size());
  if (name == "index0") return Value::integer(index0);
  if (name == "index") return Value::integer(index0 + 1);
  if (name == "revindex0") return Value::integer(length - index0 - 1);
  if (name == "revindex") return Value::integer(length - index0);
  if (name == "first") return Value::boolean(index0 == 0);
  if (name == "last") return Value::boolean(index0 + 1 == length);
  if (name == "length") return Value::integer(length);
  if (name == "depth") return Value::integer(1);
  if (name == "depth0") return Value::integer(0);
  if (name == "previtem")
    return index0 > 0 ? (*state.items)[state.index0 - 1]
                      : Value::undefined("there is no previous item");
  if (name == "nextitem")
    return index0 + 1 < length ? (*state.items)[state.index0 + 1]
                               : Value::undefined("there is no next item");
  if (name == "cycle") return Value::callable("loop.cycle", {loop});
  throw Failure(cat("loop.", name, " is not supported (supported: index, index0, revindex, ",
                    "revindex0, first, last, length, previtem, nextitem, depth, depth0, cycle)"));
}

Value no_attribute(const Value& object, const std::string& name) {
  return Value::undefined(cat("'", object_name(object), "' has no attribute '", name, "'"));
}

}  // namespace

const char* symbol(BinaryOp op) {
  constexpr std::array names = {"+", "-", "*", "/", "//", "%", "**", "~"};
  return names[static_cast<size_t>(op)];
}

const char* symbol(CompareOp op) {
  constexpr std::array names = {"==", "!=", "<", "<=", ">", ">=", "in", "not in"};
  return names[static_cast<size_t>(op)];
}

void require_hashable(const Value& value) {
  const bool unhashable =
      value.is(Kind::list) || value.is(Kind::dict) ||
      (value.is(Kind::tuple) &&
       !std::all_of(value.items().begin(), value.items().end(), [](const Value& item) {
         return !item.is(Kind::list) && !item.is(Kind::dict);
       }));
  if (unhashable) throw Failure(cat("unhashable type: '", type_name(value), "'"));
}

void fail_undefined(const Value& undefined) {
  const std::string& hint = undefined.undefined_hint();
  throw Failure(hint.empty() ? "an undefined value was used" : hint);
}

Value binary(BinaryOp op, const Value& left, const Value& right) {
  if (op == BinaryOp::concat) {
    std::string out = to_str(left);
    const std::string tail = to_str(right);
    check_bytes(out.size() + tail.size());
    out += tail;
    return Value::string(std::move(out));
  }
  if (left.is_undefined()) fail_undefined(left);
  if (right.is_undefined()) fail_undefined(right);
  return arithmetic(op, left, right);
}

bool compare(CompareOp op, const Value& left, const Value& right) {
  switch (op) {
    case CompareOp::equal:
      return equals(left, right);
    case CompareOp::not_equal:
      return !equals(left, right);
    case CompareOp::less:
    case CompareOp::less_equal:
    case CompareOp::greater:
    case CompareOp::greater_equal:
      return ordered(op, left, right, 0);
    case CompareOp::in:
      return contains(right, left);
    case CompareOp::not_in:
      return !contains(right, left);
  }
  return false;
}

Value negate(const Value& operand, bool minus) {
  if (operand.is_undefined()) fail_undefined(operand);
  if (operand.is(Kind::floating))
    return Value::floating(minus ? -operand.as_float() : operand.as_float());
  if (!operand.is_number())
    throw Failure(
        cat("bad operand type for unary ", minus ? "-" : "+", ": '", type_name(operand), "'"));
  const int64_t v = as_index(operand);
  if (minus && v == INT64_MIN) overflow();
  return Value::integer(minus ? -v : v);
}

bool contains(const Value& haystack, const Value& needle) {
  switch (haystack.kind()) {
    case Kind::undefined:
      return false;
    case Kind::string:
      if (!needle.is(Kind::string))
        throw Failure(
            cat("'in <string>' requires string as left operand, not ", type_name(needle)));
      spend_scan(haystack.as_string().size());
      return haystack.as_string().find(needle.as_string()) != std::string::npos;
    case Kind::list:
    case Kind::tuple:
      spend_operations(static_cast<int64_t>(haystack.items().size()));
      return std::any_of(haystack.items().begin(), haystack.items().end(),
                         [&](const Value& item) { return equals(item, needle); });
    case Kind::dict:
      require_hashable(needle);
      return needle.is(Kind::string) && haystack.as_dict().find(needle.as_string()) != nullptr;
    default:
      throw Failure(cat("argument of type '", type_name(haystack), "' is not iterable"));
  }
}

int64_t length(const Value& value) {
  switch (value.kind()) {
    case Kind::undefined:
      return 0;
    case Kind::string:
      spend_scan(value.as_string().size());
      return static_cast<int64_t>(count_code_points(value.as_string()));
    case Kind::list:
    case Kind::tuple:
      return static_cast<int64_t>(value.items().size());
    case Kind::dict:
      return static_cast<int64_t>(value.as_dict().size());
    default:
      throw Failure(cat("object of type '", type_name(value), "' has no len()"));
  }
}

// Every item the copy holds is work, and a string's characters become values of their own.
List iterate(const Value& value) {
  switch (value.kind()) {
    case Kind::undefined:
      return {};
    case Kind::list:
    case Kind::tuple:
      spend_operations(static_cast<int64_t>(value.items().size()));
      check_bytes(saturating_product(value.items().size(), sizeof(Value)));
      return value.items();
    case Kind::dict: {
      spend_operations(static_cast<int64_t>(value.as_dict().size()));
      List keys;
      for (const auto& entry : value.as_dict().entries())
        keys.push_back(Value::string(entry.first));
      return keys;
    }
    case Kind::string: {
      const std::string& s = value.as_string();
      const size_t code_points = count_code_points(s);
      spend_operations(static_cast<int64_t>(code_points));
      check_bytes(saturating_product(code_points, sizeof(Value) + sizeof(std::string)));
      const std::vector<size_t> at = code_point_offsets(s);
      List characters;
      characters.reserve(code_points);
      for (size_t i = 0; i + 1 < at.size(); ++i)
        characters.push_back(Value::string(s.substr(at[i], at[i + 1] - at[i])));
      return characters;
    }
    default:
      throw Failure(cat("'", type_name(value), "' object is not iterable"));
  }
}

Value get_attribute(const Value& object, const std::string& name) {
  switch (object.kind()) {
    case Kind::undefined:
      fail_undefined(object);
    case Kind::dict:
      if (listed(kDictMethods, name)) return Value::callable("dict." + name, {object});
      if (listed(kOtherDictMethods, name))
        throw Failure(cat("the dict method \"", name,
                          "\" is not supported (supported: ", joined(kDictMethods), ")"));
      if (const Value* value = object.as_dict().find(name)) return *value;
      return no_attribute(object, name);
    case Kind::string:
      if (listed(kStringMethods, name)) return Value::callable("str." + name, {object});
      if (listed(kOtherStringMethods, name))
        throw Failure(cat("the str method \"", name,
                          "\" is not supported (supported: ", joined(kStringMethods), ")"));
      return no_attribute(object, name);
    case Kind::ns:
      if (const Value* value = object.as_ns().attributes.find(name)) return *value;
      return no_attribute(object, name);
    case Kind::loop:
      return loop_attribute(object, name);
    default:
      return no_attribute(object, name);
  }
}

Value get_item(const Value& object, const Value& key) {
  if (object.is_undefined()) fail_undefined(object);
  if ((object.is_sequence() || object.is(Kind::string)) && is_int_like(key)) {
    const int64_t size = length(object);
    int64_t index = as_index(key);
    if (index < 0) index += size;
    if (index < 0 || index >= size)
      return Value::undefined(cat(object_name(object), " has no element ", as_index(key)));
    if (!object.is(Kind::string)) return object.items()[static_cast<size_t>(index)];
    const std::vector<size_t> at = code_point_offsets(object.as_string());
    const size_t i = static_cast<size_t>(index);
    return Value::string(object.as_string().substr(at[i], at[i + 1] - at[i]));
  }
  if (object.is(Kind::dict) && key.is(Kind::string)) {
    if (const Value* value = object.as_dict().find(key.as_string())) return *value;
  }
  if (key.is(Kind::string)) return get_attribute(object, key.as_string());
  return Value::undefined(cat(object_name(object), " has no element ", repr(key)));
}

Value slice(const Value& object, std::optional<int64_t> start, std::optional<int64_t> stop,
            std::optional<int64_t> step) {
  if (object.is_undefined()) fail_undefined(object);
  // jinja2 compiles a slice to Python's obj[a:b:c] (not to its forgiving getitem).
  if (object.is(Kind::dict)) throw Failure("unhashable type: 'slice'");
  if (!object.is_sequence() && !object.is(Kind::string))
    throw Failure(cat("'", type_name(object), "' object is not subscriptable"));
  const int64_t by = step.value_or(1);
  if (by == 0) throw Failure("slice step cannot be zero");
  const int64_t size = length(object);
  // Python's slice.indices(): clamp into [0, size] going forwards, [-1, size - 1] backwards.
  auto clamp = [&](std::optional<int64_t> bound, int64_t fallback) {
    if (!bound) return fallback;
    int64_t i = *bound < 0 ? *bound + size : *bound;
    return by > 0 ? std::clamp<int64_t>(i, 0, size) : std::clamp<int64_t>(i, -1, size - 1);
  };
  const int64_t first = clamp(start, by > 0 ? 0 : size - 1);
  const int64_t end = clamp(stop, by > 0 ? size : -1);
  // Counted, not stepped until past the end: first + k * by never overflows.
  const uint64_t distance =
      static_cast<uint64_t>(std::max<int64_t>(by > 0 ? end - first : first - end, 0));
  const uint64_t stride = by > 0 ? static_cast<uint64_t>(by) : 0 - static_cast<uint64_t>(by);
  const uint64_t count = (distance + stride - 1) / stride;
  spend_operations(static_cast<int64_t>(count));
  std::vector<size_t> picked;
  picked.reserve(count);
  for (uint64_t k = 0; k < count; ++k)
    picked.push_back(
        static_cast<size_t>(first + (by > 0 ? 1 : -1) * static_cast<int64_t>(k * stride)));
  if (object.is(Kind::string)) {
    const std::string& s = object.as_string();
    const std::vector<size_t> at = code_point_offsets(s);
    std::string out;
    for (const size_t i : picked) out += s.substr(at[i], at[i + 1] - at[i]);
    return Value::string(std::move(out));
  }
  List out;
  for (const size_t i : picked) out.push_back(object.items()[i]);
  return object.is(Kind::tuple) ? Value::tuple(std::move(out)) : Value::list(std::move(out));
}

}  // namespace autotrain::data::jinja
