#pragma once
// The values a chat template computes with. jinja2 evaluates templates as Python, so every value
// means what the Python value means: truthiness, str(), repr() and == are Python's
// (operators.hpp has the operators). Strings are UTF-8; what Python counts in characters
// (len, indexing, slices) counts code points.
//
// Invariant: strings, lists, tuples and dicts are immutable once built and shared between copies
// (copying a Value is cheap, whatever its size); a namespace() is the one mutable value, and every
// copy sees its changes. Building a string, list, tuple or dict charges the render's budget
// (budget.hpp) for its bytes.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace autotrain::data::jinja {

// A failure while rendering (what Python raises: a TypeError, an UndefinedError, ...). The
// evaluator turns it into an autotrain::Error naming the template's origin and line.
class Failure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Value;
class Dict;
using List = std::vector<Value>;
struct Namespace;
struct Callable;
struct LoopState;

// The order of Value's alternatives.
enum class Kind {
  undefined,
  none,
  boolean,
  integer,
  floating,
  string,
  list,
  tuple,
  dict,
  ns,
  callable,
  loop
};

// jinja2's Undefined: falsy, renders as "", and raises with `hint` ("'x' is undefined",
// "'dict object' has no attribute 'y'") when used as anything more.
struct Undefined {
  std::string hint;
};

class Value {
 public:
  Value() = default;  // undefined, without a hint
  static Value undefined(std::string hint);
  static Value none();
  static Value boolean(bool value);
  static Value integer(int64_t value);
  static Value floating(double value);
  static Value string(std::string value);
  static Value list(List items);
  static Value tuple(List items);
  static Value dict(Dict entries);
  static Value ns(Dict attributes);
  static Value callable(std::string name, List bound = {});
  static Value loop(std::shared_ptr<const List> items, size_t index0);

  Kind kind() const { return static_cast<Kind>(data_.index()); }
  bool is(Kind kind) const { return this->kind() == kind; }
  bool is_undefined() const { return is(Kind::undefined); }
  bool is_sequence() const { return is(Kind::list) || is(Kind::tuple); }
  bool is_number() const { return is(Kind::integer) || is(Kind::floating) || is(Kind::boolean); }

  bool as_bool() const { return std::get<bool>(data_); }
  int64_t as_int() const { return std::get<int64_t>(data_); }
  double as_float() const { return std::get<double>(data_); }
  // A boolean, integer or float as a double (Python's bool is an int).
  double as_number() const;
  const std::string& as_string() const { return *std::get<Text>(data_).text; }
  // A list's or a tuple's items.
  const List& items() const;
  const std::shared_ptr<const List>& items_ptr() const;
  const Dict& as_dict() const { return *std::get<std::shared_ptr<const Dict>>(data_); }
  Namespace& as_ns() const { return *std::get<std::shared_ptr<Namespace>>(data_); }
  const Callable& as_callable() const { return *std::get<std::shared_ptr<const Callable>>(data_); }
  const LoopState& as_loop() const { return *std::get<std::shared_ptr<const LoopState>>(data_); }
  const std::string& undefined_hint() const { return std::get<Undefined>(data_).hint; }

 private:
  struct Text {
    std::shared_ptr<const std::string> text;
  };
  struct ListItems {
    std::shared_ptr<const List> items;
  };
  struct TupleItems {
    std::shared_ptr<const List> items;
  };
  struct None {};
  using Data = std::variant<Undefined, None, bool, int64_t, double, Text, ListItems, TupleItems,
                            std::shared_ptr<const Dict>, std::shared_ptr<Namespace>,
                            std::shared_ptr<const Callable>, std::shared_ptr<const LoopState>>;
  explicit Value(Data data) : data_(std::move(data)) {}
  Data data_;
};

// A Python dict with string keys, in insertion order. Chat messages have a handful of keys, so
// lookups are linear.
class Dict {
 public:
  const Value* find(std::string_view key) const;
  // Replaces the value of an existing key in place (Python keeps the key's first position).
  void set(std::string key, Value value);
  const std::vector<std::pair<std::string, Value>>& entries() const { return entries_; }
  size_t size() const { return entries_.size(); }

 private:
  std::vector<std::pair<std::string, Value>> entries_;
};

// jinja2's namespace(): attributes a template may assign inside loops (`set ns.x = ...`).
struct Namespace {
  Dict attributes;
};

// A global function ("range", "namespace", ...) or a bound method ("str.split" with the string
// as bound[0]).
struct Callable {
  std::string name;
  List bound;
};

// The `loop` variable of a for loop: item `index0` of `items` (the items the loop visits, after
// its `if` filter).
struct LoopState {
  std::shared_ptr<const List> items;
  size_t index0 = 0;
};

// Python's bool(value); undefined is false.
bool truthy(const Value& value);
// Python's type name ("str", "int", "NoneType", "dict", ...), for error messages.
std::string type_name(const Value& value);
// jinja2's name of a value in undefined hints: "dict object", "list object", "None".
std::string object_name(const Value& value);
// Python's str(value); undefined is "". `depth` guards self-nesting values.
std::string to_str(const Value& value);
std::string repr(const Value& value, int depth = 0);
// Python's float.__repr__: the shortest text that reads back as `value` ("0.1", "1e-05", "1e+16").
std::string float_repr(double value);
// Python's ==.
bool equals(const Value& a, const Value& b, int depth = 0);

// Values nested deeper than this (a list of a list of ...) are an error, not a stack overflow.
constexpr int kMaxValueDepth = 256;
void check_depth(int depth);

}  // namespace autotrain::data::jinja
