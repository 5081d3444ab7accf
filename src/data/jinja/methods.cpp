// Methods of str, dict and loop, the global functions, and Python's argument binding.
#include <algorithm>
#include <array>
#include <ctime>

#include "autotrain/core/error.hpp"
#include "budget.hpp"
#include "builtins.hpp"
#include "operators.hpp"
#include "strings.hpp"

namespace autotrain::data::jinja {

Bound::Bound(std::string_view function, const CallArgs& args,
             std::initializer_list<std::string_view> parameters)
    : function_(function), parameters_(parameters), values_(parameters.size(), nullptr) {
  if (args.positional.size() > parameters_.size())
    throw Failure(cat(function_, "() takes at most ", parameters_.size(), " argument",
                      parameters_.size() == 1 ? "" : "s", " (", args.positional.size(), " given)"));
  for (size_t i = 0; i < args.positional.size(); ++i) values_[i] = &args.positional[i];
  for (const auto& [key, value] : args.keyword) {
    const auto it = std::find(parameters_.begin(), parameters_.end(), key);
    if (it == parameters_.end())
      throw Failure(cat(function_, "() got an unexpected keyword argument '", key, "'"));
    const size_t i = static_cast<size_t>(it - parameters_.begin());
    if (values_[i] != nullptr)
      throw Failure(cat(function_, "() got multiple values for argument '", key, "'"));
    values_[i] = &value;
  }
}

std::string Bound::string(size_t i, std::string fallback) const {
  std::optional<std::string> value = optional_string(i);
  return value ? std::move(*value) : std::move(fallback);
}

std::optional<std::string> Bound::optional_string(size_t i) const {
  if (!has(i)) return std::nullopt;
  if (!values_[i]->is(Kind::string))
    throw Failure(
        cat(function_, "(): ", parameters_[i], " must be a str, not ", type_name(*values_[i])));
  return values_[i]->as_string();
}

int64_t Bound::integer(size_t i, int64_t fallback) const {
  if (!has(i)) return fallback;
  const Value& v = *values_[i];
  if (v.is(Kind::boolean)) return v.as_bool();
  if (!v.is(Kind::integer))
    throw Failure(cat(function_, "(): ", parameters_[i], " must be an int, not ", type_name(v)));
  return v.as_int();
}

bool Bound::flag(size_t i, bool fallback) const {
  return has(i) ? truthy(*values_[i]) : fallback;
}

namespace {

constexpr std::array kGlobalFunctions = {"range", "namespace", "dict", "raise_exception",
                                         "strftime_now"};

const std::string& receiver_string(const Callable& method) {
  return method.bound[0].as_string();
}

// startswith / endswith: a prefix, or a tuple (or list) of them.
bool affix_matches(const std::string& text, const Value& affix, bool at_start) {
  auto one = [&](const Value& candidate) {
    if (!candidate.is(Kind::string))
      throw Failure(cat(at_start ? "startswith" : "endswith",
                        " first arg must be str or a tuple of str, not ", type_name(candidate)));
    const std::string& s = candidate.as_string();
    if (s.size() > text.size()) return false;
    return at_start ? text.compare(0, s.size(), s) == 0
                    : text.compare(text.size() - s.size(), s.size(), s) == 0;
  };
  if (!affix.is_sequence()) return one(affix);
  return std::any_of(affix.items().begin(), affix.items().end(), one);
}

Value string_list(const std::vector<std::string>& parts) {
  List items;
  for (const std::string& part : parts) items.push_back(Value::string(part));
  return Value::list(std::move(items));
}

Value join(const std::string& separator, const Value& iterable) {
  std::string out;
  const List items = iterate(iterable);
  for (size_t i = 0; i < items.size(); ++i) {
    if (!items[i].is(Kind::string))
      throw Failure(
          cat("sequence item ", i, ": expected str instance, ", type_name(items[i]), " found"));
    check_bytes(out.size() + separator.size() + items[i].as_string().size());
    if (i > 0) out += separator;
    out += items[i].as_string();
  }
  return Value::string(std::move(out));
}

Value string_method(const std::string& method, const Callable& callable, const CallArgs& args) {
  const std::string& text = receiver_string(callable);
  const std::string name = "str." + method;
  if (method == "startswith" || method == "endswith") {
    const Bound a(name, args, {"prefix"});
    if (!a.get(0)) throw Failure(cat(name, "() takes at least 1 argument (0 given)"));
    return Value::boolean(affix_matches(text, *a.get(0), method == "startswith"));
  }
  if (method == "strip" || method == "lstrip" || method == "rstrip") {
    const Bound a(name, args, {"chars"});
    return Value::string(strip(text, a.optional_string(0), method != "rstrip", method != "lstrip"));
  }
  if (method == "split" || method == "rsplit") {
    const Bound a(name, args, {"sep", "maxsplit"});
    return string_list(split(text, a.optional_string(0), a.integer(1, -1), method == "rsplit"));
  }
  if (method == "replace") {
    const Bound a(name, args, {"old", "new", "count"});
    if (!a.has(1)) throw Failure("str.replace() takes at least 2 arguments");
    return Value::string(replace(text, a.string(0, ""), a.string(1, ""), a.integer(2, -1)));
  }
  if (method == "removeprefix" || method == "removesuffix") {
    const Bound a(name, args, {"affix"});
    const std::string affix = a.string(0, "");
    const bool prefix = method == "removeprefix";
    if (!affix_matches(text, Value::string(affix), prefix)) return Value::string(text);
    return Value::string(prefix ? text.substr(affix.size())
                                : text.substr(0, text.size() - affix.size()));
  }
  if (method == "join") {
    const Bound a(name, args, {"iterable"});
    return join(text, a.get(0) ? *a.get(0) : Value());
  }
  if (method == "find" || method == "count") {
    const Bound a(name, args, {"sub"});
    const std::string sub = a.string(0, "");
    return Value::integer(method == "find" ? find(text, sub) : count(text, sub));
  }
  const Bound none(name, args, {});
  if (method == "upper") return Value::string(upper(text));
  if (method == "lower") return Value::string(lower(text));
  if (method == "title") return Value::string(title(text));
  if (method == "capitalize") return Value::string(capitalize(text));
  if (method == "islower") return Value::boolean(is_lower(text));
  return Value::boolean(is_upper(text));  // isupper
}

Value dict_method(const std::string& method, const Callable& callable, const CallArgs& args) {
  const Dict& dict = callable.bound[0].as_dict();
  if (method == "get") {
    const Bound a("dict.get", args, {"key", "default"});
    if (!a.get(0)) throw Failure("dict.get() takes at least 1 argument (0 given)");
    const Value* value = a.get(0)->is(Kind::string) ? dict.find(a.get(0)->as_string()) : nullptr;
    if (value) return *value;
    return a.get(1) ? *a.get(1) : Value::none();
  }
  const Bound none("dict." + method, args, {});
  List items;
  for (const auto& [key, value] : dict.entries()) {
    if (method == "items") items.push_back(Value::tuple({Value::string(key), value}));
    if (method == "keys") items.push_back(Value::string(key));
    if (method == "values") items.push_back(value);
  }
  return Value::list(std::move(items));
}

Value range(const CallArgs& args) {
  if (!args.keyword.empty()) throw Failure("range() takes no keyword arguments");
  std::vector<int64_t> bounds;
  for (const Value& v : args.positional) {
    if (!v.is(Kind::integer) && !v.is(Kind::boolean))
      throw Failure(cat("'", type_name(v), "' object cannot be interpreted as an integer"));
    bounds.push_back(v.is(Kind::boolean) ? v.as_bool() : v.as_int());
  }
  if (bounds.empty() || bounds.size() > 3)
    throw Failure(cat("range expected 1 to 3 arguments, got ", bounds.size()));
  const int64_t start = bounds.size() == 1 ? 0 : bounds[0];
  const int64_t stop = bounds.size() == 1 ? bounds[0] : bounds[1];
  const int64_t step = bounds.size() == 3 ? bounds[2] : 1;
  if (step == 0) throw Failure("range() arg 3 must not be zero");
  // The length as Python computes it, in unsigned 64-bit arithmetic (the distance between two
  // int64 fits), then start + k * step modulo 2^64, which is exact since it lies between start
  // and stop: bounds near the int64 limits neither overflow nor loop.
  const bool up = step > 0;
  const uint64_t distance =
      up ? (stop > start ? static_cast<uint64_t>(stop) - static_cast<uint64_t>(start) : 0)
         : (start > stop ? static_cast<uint64_t>(start) - static_cast<uint64_t>(stop) : 0);
  const uint64_t stride = up ? static_cast<uint64_t>(step) : 0 - static_cast<uint64_t>(step);
  const uint64_t count = distance / stride + (distance % stride != 0 ? 1 : 0);
  // jinja2's sandbox refuses ranges longer than MAX_RANGE.
  constexpr uint64_t kMaxRange = 100000;
  if (count > kMaxRange)
    throw Failure(cat("range too big: the sandbox allows at most ", kMaxRange, " items"));
  List items;
  items.reserve(count);
  for (uint64_t k = 0; k < count; ++k)
    items.push_back(Value::integer(
        static_cast<int64_t>(static_cast<uint64_t>(start) + k * static_cast<uint64_t>(step))));
  return Value::list(std::move(items));
}

// namespace(mapping, **kwargs) and dict(mapping, **kwargs).
Dict mapping(const char* function, const CallArgs& args) {
  if (args.positional.size() > 1)
    throw Failure(cat(function, "() expected at most 1 argument, got ", args.positional.size()));
  Dict dict;
  if (!args.positional.empty()) {
    const Value& source = args.positional[0];
    if (!source.is(Kind::dict))
      throw Failure(
          cat(function, "() takes a dict and keyword arguments, not a ", type_name(source)));
    dict = source.as_dict();
  }
  for (const auto& [key, value] : args.keyword) dict.set(key, value);
  return dict;
}

Value strftime_now(const CallArgs& args) {
  const Bound a("strftime_now", args, {"format"});
  const std::string format = a.string(0, "");
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  check_bytes(256 + saturating_product(format.size(), 8));
  std::string out(256 + format.size() * 8, '\0');
  out.resize(std::strftime(out.data(), out.size(), format.c_str(), &local));
  return Value::string(std::move(out));
}

Value global_function(const std::string& name, const CallArgs& args) {
  if (name == "range") return range(args);
  if (name == "namespace") return Value::ns(mapping("namespace", args));
  if (name == "dict") return Value::dict(mapping("dict", args));
  if (name == "strftime_now") return strftime_now(args);
  // raise_exception(message): what the template wants the user to read.
  const Bound a("raise_exception", args, {"message"});
  throw Failure(cat("the template raised an error: ", a.get(0) ? to_str(*a.get(0)) : ""));
}

}  // namespace

bool is_global_function(std::string_view name) {
  return std::find(kGlobalFunctions.begin(), kGlobalFunctions.end(), name) !=
         kGlobalFunctions.end();
}

Value call(const Value& callable, const CallArgs& args) {
  const Callable& c = callable.as_callable();
  if (c.bound.empty()) return global_function(c.name, args);
  const size_t dot = c.name.find('.');
  const std::string type = c.name.substr(0, dot), method = c.name.substr(dot + 1);
  if (type == "str") return string_method(method, c, args);
  if (type == "dict") return dict_method(method, c, args);
  // loop.cycle(*values): the value for this iteration.
  if (args.positional.empty()) throw Failure("no items for cycling given");
  const LoopState& loop = c.bound[0].as_loop();
  return args.positional[loop.index0 % args.positional.size()];
}

Value attribute_path(const Value& item, const std::string& path) {
  Value value = item;
  size_t begin = 0;
  for (;;) {
    const size_t dot = path.find('.', begin);
    const std::string part = path.substr(begin, dot == std::string::npos ? dot : dot - begin);
    const bool digits = !part.empty() && std::all_of(part.begin(), part.end(),
                                                     [](char c) { return c >= '0' && c <= '9'; });
    value = digits ? get_item(value, Value::integer(std::stoll(part)))
                   : get_item(value, Value::string(part));
    if (dot == std::string::npos) return value;
    begin = dot + 1;
  }
}

}  // namespace autotrain::data::jinja
