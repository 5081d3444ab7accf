#include "value.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>

#include "autotrain/core/error.hpp"
#include "budget.hpp"
#include "strings.hpp"

namespace autotrain::data::jinja {
namespace {

size_t dict_bytes(const Dict& dict) {
  size_t bytes = saturating_product(dict.size(), sizeof(std::pair<std::string, Value>));
  for (const auto& entry : dict.entries()) bytes += entry.first.size();
  return bytes;
}

}  // namespace

Value Value::undefined(std::string hint) {
  return Value(Data(Undefined{std::move(hint)}));
}
Value Value::none() {
  return Value(Data(None{}));
}
Value Value::boolean(bool value) {
  return Value(Data(value));
}
Value Value::integer(int64_t value) {
  return Value(Data(value));
}
Value Value::floating(double value) {
  return Value(Data(value));
}
Value Value::string(std::string value) {
  spend_bytes(value.size());
  spend_scan(value.size());
  return Value(Data(Text{std::make_shared<const std::string>(std::move(value))}));
}
Value Value::list(List items) {
  spend_bytes(saturating_product(items.size(), sizeof(Value)));
  return Value(Data(ListItems{std::make_shared<const List>(std::move(items))}));
}
Value Value::tuple(List items) {
  spend_bytes(saturating_product(items.size(), sizeof(Value)));
  return Value(Data(TupleItems{std::make_shared<const List>(std::move(items))}));
}
Value Value::dict(Dict entries) {
  spend_bytes(dict_bytes(entries));
  return Value(Data(std::shared_ptr<const Dict>(std::make_shared<Dict>(std::move(entries)))));
}
Value Value::ns(Dict attributes) {
  return Value(Data(std::make_shared<Namespace>(Namespace{std::move(attributes)})));
}
Value Value::callable(std::string name, List bound) {
  return Value(Data(std::shared_ptr<const Callable>(
      std::make_shared<Callable>(Callable{std::move(name), std::move(bound)}))));
}
Value Value::loop(std::shared_ptr<const List> items, size_t index0) {
  return Value(Data(std::shared_ptr<const LoopState>(
      std::make_shared<LoopState>(LoopState{std::move(items), index0}))));
}

double Value::as_number() const {
  switch (kind()) {
    case Kind::boolean:
      return as_bool() ? 1.0 : 0.0;
    case Kind::integer:
      return static_cast<double>(as_int());
    default:
      return as_float();
  }
}

const std::shared_ptr<const List>& Value::items_ptr() const {
  if (const auto* list = std::get_if<ListItems>(&data_)) return list->items;
  return std::get<TupleItems>(data_).items;
}

const List& Value::items() const {
  return *items_ptr();
}

const Value* Dict::find(std::string_view key) const {
  for (const auto& [k, v] : entries_)
    if (k == key) return &v;
  return nullptr;
}

void Dict::set(std::string key, Value value) {
  for (auto& [k, v] : entries_) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  entries_.emplace_back(std::move(key), std::move(value));
}

void check_depth(int depth) {
  if (depth > kMaxValueDepth)
    throw Failure(cat("a value nested more than ", kMaxValueDepth, " levels deep"));
}

bool truthy(const Value& value) {
  switch (value.kind()) {
    case Kind::undefined:
    case Kind::none:
      return false;
    case Kind::boolean:
      return value.as_bool();
    case Kind::integer:
      return value.as_int() != 0;
    case Kind::floating:
      return value.as_float() != 0.0;
    case Kind::string:
      return !value.as_string().empty();
    case Kind::list:
    case Kind::tuple:
      return !value.items().empty();
    case Kind::dict:
      return value.as_dict().size() > 0;
    default:
      return true;
  }
}

std::string type_name(const Value& value) {
  switch (value.kind()) {
    case Kind::undefined:
      return "Undefined";
    case Kind::none:
      return "NoneType";
    case Kind::boolean:
      return "bool";
    case Kind::integer:
      return "int";
    case Kind::floating:
      return "float";
    case Kind::string:
      return "str";
    case Kind::list:
      return "list";
    case Kind::tuple:
      return "tuple";
    case Kind::dict:
      return "dict";
    case Kind::ns:
      return "Namespace";
    case Kind::callable:
      return "builtin_function_or_method";
    case Kind::loop:
      return "LoopContext";
  }
  return "object";
}

std::string object_name(const Value& value) {
  if (value.is(Kind::none)) return "None";
  return type_name(value) + " object";
}

std::string float_repr(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  // The shortest round-trip digits, then Python's layout: positional for exponents in
  // [-4, 16), else d.ddde[+-]XX.
  char buffer[64];
  const auto [end, ec] =
      std::to_chars(buffer, buffer + sizeof(buffer), value, std::chars_format::scientific);
  (void)ec;
  const std::string text(buffer, end);
  const size_t e = text.find('e');
  const bool negative = text[0] == '-';
  std::string digits;
  for (size_t i = negative ? 1 : 0; i < e; ++i)
    if (text[i] != '.') digits += text[i];
  const int exponent = std::atoi(text.c_str() + e + 1);
  std::string out = negative ? "-" : "";
  if (exponent < -4 || exponent >= 16) {
    out += digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    out += exponent < 0 ? "e-" : "e+";
    const int magnitude = std::abs(exponent);
    out += (magnitude < 10 ? "0" : "") + std::to_string(magnitude);
  } else if (exponent < 0) {
    out += "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
  } else {
    const size_t point = static_cast<size_t>(exponent) + 1;
    if (digits.size() <= point) {
      out += digits + std::string(point - digits.size(), '0') + ".0";
    } else {
      out += digits.substr(0, point) + "." + digits.substr(point);
    }
  }
  return out;
}

std::string to_str(const Value& value) {
  switch (value.kind()) {
    case Kind::undefined:
      return "";
    case Kind::string:
      return value.as_string();
    default:
      return repr(value);
  }
}

namespace {

// A repr grows item by item; each step is checked against the budget before it is appended
// (a list holding one large string a thousand times is a thousand times its size).
void append_checked(std::string& out, std::string_view piece) {
  spend_operations();
  check_bytes(out.size() + piece.size());
  out += piece;
}

std::string items_repr(const List& items, int depth) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ", ";
    append_checked(out, repr(items[i], depth + 1));
  }
  return out;
}

std::string dict_repr(const Dict& dict, int depth) {
  std::string out = "{";
  for (size_t i = 0; i < dict.entries().size(); ++i) {
    const auto& [key, value] = dict.entries()[i];
    if (i > 0) out += ", ";
    append_checked(out, string_repr(key) + ": " + repr(value, depth + 1));
  }
  return out + "}";
}

}  // namespace

std::string repr(const Value& value, int depth) {
  check_depth(depth);
  switch (value.kind()) {
    case Kind::undefined:
      return "Undefined";
    case Kind::none:
      return "None";
    case Kind::boolean:
      return value.as_bool() ? "True" : "False";
    case Kind::integer:
      return std::to_string(value.as_int());
    case Kind::floating:
      return float_repr(value.as_float());
    case Kind::string:
      return string_repr(value.as_string());
    case Kind::list:
      return "[" + items_repr(value.items(), depth) + "]";
    case Kind::tuple:
      return "(" + items_repr(value.items(), depth) + (value.items().size() == 1 ? ",)" : ")");
    case Kind::dict:
      return dict_repr(value.as_dict(), depth);
    case Kind::ns:
      return "<Namespace " + dict_repr(value.as_ns().attributes, depth) + ">";
    case Kind::callable:
      return "<built-in method " + value.as_callable().name + ">";
    case Kind::loop:
      return "<LoopContext " + std::to_string(value.as_loop().index0 + 1) + ">";
  }
  return "";
}

namespace {

bool dicts_equal(const Dict& a, const Dict& b, int depth) {
  if (a.size() != b.size()) return false;
  for (const auto& [key, value] : a.entries()) {
    const Value* other = b.find(key);
    if (other == nullptr || !equals(value, *other, depth + 1)) return false;
  }
  return true;
}

}  // namespace

bool equals(const Value& a, const Value& b, int depth) {
  check_depth(depth);
  if (a.is_number() && b.is_number()) {
    if (a.is(Kind::floating) || b.is(Kind::floating)) return a.as_number() == b.as_number();
    const int64_t x = a.is(Kind::boolean) ? a.as_bool() : a.as_int();
    const int64_t y = b.is(Kind::boolean) ? b.as_bool() : b.as_int();
    return x == y;
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Kind::undefined:
    case Kind::none:
      return true;
    case Kind::string:
      spend_scan(a.as_string().size());
      return a.as_string() == b.as_string();
    case Kind::list:
    case Kind::tuple: {
      const List &x = a.items(), &y = b.items();
      if (x.size() != y.size()) return false;
      spend_operations(static_cast<int64_t>(x.size()));
      for (size_t i = 0; i < x.size(); ++i)
        if (!equals(x[i], y[i], depth + 1)) return false;
      return true;
    }
    case Kind::dict:
      return dicts_equal(a.as_dict(), b.as_dict(), depth);
    case Kind::ns:
      return &a.as_ns() == &b.as_ns();
    case Kind::callable:
      return &a.as_callable() == &b.as_callable();
    case Kind::loop:
      return &a.as_loop() == &b.as_loop();
    default:
      return false;
  }
}

}  // namespace autotrain::data::jinja
