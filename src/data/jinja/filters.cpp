// jinja2's filters, with transformers' tojson (json.dumps, ensure_ascii off by default).
// Filters that jinja2 implements as generators (map, select, unique, reverse, ...) return
// lists here; templates only iterate, join or count them.
#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "autotrain/core/error.hpp"
#include "budget.hpp"
#include "builtins.hpp"
#include "json.hpp"
#include "operators.hpp"
#include "strings.hpp"

namespace autotrain::data::jinja {
namespace {

using Filter = Value (*)(const Value& operand, const CallArgs& args);

Value text_filter(const Value& operand, const CallArgs& args, const char* name,
                  std::string (*transform)(std::string_view)) {
  const Bound none(name, args, {});
  return Value::string(transform(to_str(operand)));
}

Value abs_filter(const Value& v, const CallArgs& args) {
  const Bound none("abs", args, {});
  if (v.is(Kind::floating)) return Value::floating(std::fabs(v.as_float()));
  if (!v.is_number()) throw Failure(cat("bad operand type for abs(): '", type_name(v), "'"));
  return negate(v, v.as_number() < 0);
}

Value length_filter(const Value& v, const CallArgs& args) {
  const Bound none("length", args, {});
  return Value::integer(length(v));
}

Value default_filter(const Value& v, const CallArgs& args) {
  const Bound a("default", args, {"default_value", "boolean"});
  if (v.is_undefined() || (a.flag(1, false) && !truthy(v)))
    return a.get(0) ? *a.get(0) : Value::string("");
  return v;
}

Value first_filter(const Value& v, const CallArgs& args) {
  const Bound none("first", args, {});
  const List items = iterate(v);
  return items.empty() ? Value::undefined("No first item, sequence was empty.") : items.front();
}

Value last_filter(const Value& v, const CallArgs& args) {
  const Bound none("last", args, {});
  const List items = iterate(v);
  return items.empty() ? Value::undefined("No last item, sequence was empty.") : items.back();
}

// Python's int(text) / float(text) of a str: surrounding whitespace, a sign, digits with single
// underscores between them.
std::optional<std::string> number_text(const std::string& raw) {
  std::string text = strip(raw, std::nullopt, true, true);
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '_') {
      out += text[i];
    } else if (i == 0 || i + 1 == text.size() ||
               !std::isalnum(static_cast<unsigned char>(text[i - 1])) ||
               !std::isalnum(static_cast<unsigned char>(text[i + 1]))) {
      return std::nullopt;
    }
  }
  return out;
}

std::optional<int64_t> parse_int(const std::string& raw, int base) {
  std::optional<std::string> text = number_text(raw);
  if (!text || text->empty()) return std::nullopt;
  const char* begin = text->data();
  const char* end = begin + text->size();
  if (*begin == '+') ++begin;
  int64_t value = 0;
  const auto [ptr, ec] = std::from_chars(begin, end, value, base);
  if (ec != std::errc() || ptr != end || begin == end) return std::nullopt;
  return value;
}

std::optional<double> parse_float(const std::string& raw) {
  std::optional<std::string> text = number_text(raw);
  if (!text || text->empty()) return std::nullopt;
  char* end = nullptr;
  const double value = std::strtod(text->c_str(), &end);
  if (end != text->c_str() + text->size()) return std::nullopt;
  return value;
}

Value int_filter(const Value& v, const CallArgs& args) {
  const Bound a("int", args, {"default", "base"});
  const Value fallback = a.get(0) ? *a.get(0) : Value::integer(0);
  if (v.is_undefined()) fail_undefined(v);
  if (v.is(Kind::integer)) return v;
  if (v.is(Kind::boolean)) return Value::integer(v.as_bool());
  std::optional<double> number;
  if (v.is(Kind::string)) {
    if (const std::optional<int64_t> i =
            parse_int(v.as_string(), static_cast<int>(a.integer(1, 10))))
      return Value::integer(*i);
    number = parse_float(v.as_string());  // jinja2: "42.23"|int is 42
  } else if (v.is(Kind::floating)) {
    number = v.as_float();
  }
  if (!number || std::isnan(*number)) return fallback;
  if (std::isinf(*number)) throw Failure("cannot convert float infinity to integer");
  if (std::fabs(*number) >= 9.2e18) throw Failure("integer overflow (beyond 64 bits)");
  return Value::integer(static_cast<int64_t>(std::trunc(*number)));
}

Value float_filter(const Value& v, const CallArgs& args) {
  const Bound a("float", args, {"default"});
  if (v.is_undefined()) fail_undefined(v);
  if (v.is_number()) return Value::floating(v.as_number());
  if (v.is(Kind::string))
    if (const std::optional<double> number = parse_float(v.as_string()))
      return Value::floating(*number);
  return a.get(0) ? *a.get(0) : Value::floating(0.0);
}

// `width` spaces, checked against the budget before they are allocated.
std::string spaces(int64_t width) {
  const size_t count = static_cast<size_t>(std::max<int64_t>(width, 0));
  check_bytes(count);
  return std::string(count, ' ');
}

Value indent_filter(const Value& v, const CallArgs& args) {
  const Bound a("indent", args, {"width", "first", "blank"});
  std::string prefix(4, ' ');
  if (a.has(0))
    prefix = a.get(0)->is(Kind::string) ? a.get(0)->as_string() : spaces(a.integer(0, 4));
  if (v.is_undefined()) fail_undefined(v);
  if (!v.is(Kind::string))
    throw Failure(cat("unsupported operand type(s) for +=: '", type_name(v), "' and 'str'"));
  return Value::string(indent(v.as_string(), prefix, a.flag(1, false), a.flag(2, false)));
}

Value items_filter(const Value& v, const CallArgs& args) {
  const Bound none("items", args, {});
  if (v.is_undefined()) return Value::list({});
  if (!v.is(Kind::dict)) throw Failure("Can only get item pairs from a mapping.");
  List items;
  for (const auto& [key, value] : v.as_dict().entries())
    items.push_back(Value::tuple({Value::string(key), value}));
  return Value::list(std::move(items));
}

Value join_filter(const Value& v, const CallArgs& args) {
  const Bound a("join", args, {"d", "attribute"});
  const std::string separator = a.get(0) ? to_str(*a.get(0)) : "";
  const std::optional<std::string> attribute =
      a.has(1) ? std::optional(to_str(*a.get(1))) : std::nullopt;
  std::string out;
  const List items = iterate(v);
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string text = to_str(attribute ? attribute_path(items[i], *attribute) : items[i]);
    check_bytes(out.size() + separator.size() + text.size());
    if (i > 0) out += separator;
    out += text;
  }
  return Value::string(std::move(out));
}

Value list_filter(const Value& v, const CallArgs& args) {
  const Bound none("list", args, {});
  return Value::list(iterate(v));
}

// map(attribute='x', default=...) or map('filter', *args).
Value map_filter(const Value& v, const CallArgs& args) {
  List out;
  if (!truthy(v)) return Value::list({});  // jinja2 does not iterate a falsy value (none, 0)
  if (args.positional.empty()) {
    const Bound a("map", args, {"attribute", "default"});
    if (!a.get(0)) throw Failure("map requires a filter argument");
    const std::string attribute = to_str(*a.get(0));
    for (const Value& item : iterate(v)) {
      Value mapped = attribute_path(item, attribute);
      out.push_back(mapped.is_undefined() && a.has(1) ? *a.get(1) : std::move(mapped));
    }
    return Value::list(std::move(out));
  }
  if (!args.positional[0].is(Kind::string)) throw Failure("map: the filter name must be a str");
  const std::string name = args.positional[0].as_string();
  if (!is_filter(name)) throw Failure(cat("map: no filter named '", name, "'"));
  CallArgs rest{List(args.positional.begin() + 1, args.positional.end()), args.keyword};
  for (const Value& item : iterate(v)) out.push_back(apply_filter(name, item, rest));
  return Value::list(std::move(out));
}

// select / reject / selectattr / rejectattr: keep the items whose (attribute's) test passes
// (or fails); without a test, its truthiness.
Value select(const Value& v, const CallArgs& args, bool keep, bool by_attribute) {
  const size_t skip = by_attribute ? 1 : 0;
  if (by_attribute && (args.positional.empty() || !args.positional[0].is(Kind::string)))
    throw Failure("Missing parameter for attribute name");
  const bool has_test = args.positional.size() > skip;
  std::string test;
  if (has_test) {
    if (!args.positional[skip].is(Kind::string)) throw Failure("the test name must be a str");
    test = args.positional[skip].as_string();
    if (!is_test(test)) throw Failure(cat("no test named '", test, "'"));
  }
  const CallArgs rest{
      has_test ? List(args.positional.begin() + skip + 1, args.positional.end()) : List{},
      args.keyword};
  List out;
  if (!truthy(v)) return Value::list({});  // jinja2 does not iterate a falsy value (none, 0)
  for (const Value& item : iterate(v)) {
    const Value subject =
        by_attribute ? attribute_path(item, args.positional[0].as_string()) : item;
    const bool passed = has_test ? apply_test(test, subject, rest) : truthy(subject);
    if (passed == keep) out.push_back(item);
  }
  return Value::list(std::move(out));
}

Value select_filter(const Value& v, const CallArgs& a) {
  return select(v, a, true, false);
}
Value reject_filter(const Value& v, const CallArgs& a) {
  return select(v, a, false, false);
}
Value selectattr_filter(const Value& v, const CallArgs& a) {
  return select(v, a, true, true);
}
Value rejectattr_filter(const Value& v, const CallArgs& a) {
  return select(v, a, false, true);
}

Value replace_filter(const Value& v, const CallArgs& args) {
  const Bound a("replace", args, {"old", "new", "count"});
  if (!a.get(0) || !a.get(1)) throw Failure("replace() needs the old and the new text");
  return Value::string(replace(to_str(v), to_str(*a.get(0)), to_str(*a.get(1)), a.integer(2, -1)));
}

Value reverse_filter(const Value& v, const CallArgs& args) {
  const Bound none("reverse", args, {});
  if (v.is(Kind::string)) return slice(v, std::nullopt, std::nullopt, -1);
  List items = iterate(v);
  std::reverse(items.begin(), items.end());
  return Value::list(std::move(items));
}

Value safe_filter(const Value& v, const CallArgs& args) {
  const Bound none("safe", args, {});
  return v;
}

// sort(reverse=False, case_sensitive=False, attribute=None): Python's stable sorted(), by the
// attribute (or comma-separated attributes) when given, strings compared lower-cased.
Value sort_filter(const Value& v, const CallArgs& args) {
  const Bound a("sort", args, {"reverse", "case_sensitive", "attribute"});
  const bool reverse = a.flag(0, false), case_sensitive = a.flag(1, false);
  const std::vector<std::string> attributes =
      a.has(2) ? split(to_str(*a.get(2)), std::string(","), -1, false) : std::vector<std::string>{};
  auto key_of = [&](const Value& item) {
    auto fold = [&](Value key) {
      return !case_sensitive && key.is(Kind::string) ? Value::string(lower(key.as_string())) : key;
    };
    if (attributes.empty()) return fold(item);
    if (attributes.size() == 1) return fold(attribute_path(item, attributes[0]));
    List keys;
    for (const std::string& attribute : attributes)
      keys.push_back(fold(attribute_path(item, attribute)));
    return Value::tuple(std::move(keys));
  };
  std::vector<std::pair<Value, Value>> keyed;  // (key, item)
  for (const Value& item : iterate(v)) keyed.emplace_back(key_of(item), item);
  // n log n comparisons.
  spend_operations(static_cast<int64_t>(keyed.size()) *
                   (64 - __builtin_clzll(static_cast<unsigned long long>(keyed.size()) | 1)));
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    return reverse ? compare(CompareOp::less, y.first, x.first)
                   : compare(CompareOp::less, x.first, y.first);
  });
  List out;
  for (auto& [key, item] : keyed) out.push_back(std::move(item));
  return Value::list(std::move(out));
}

Value string_filter(const Value& v, const CallArgs& args) {
  const Bound none("string", args, {});
  return Value::string(to_str(v));
}

// transformers' tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False).
Value tojson_filter(const Value& v, const CallArgs& args) {
  const Bound a("tojson", args, {"ensure_ascii", "indent", "separators", "sort_keys"});
  JsonFormat format;
  format.ensure_ascii = a.flag(0, false);
  if (a.has(1)) {
    const Value& indent = *a.get(1);
    format.indent = indent.is(Kind::string) ? indent.as_string() : spaces(a.integer(1, 0));
  }
  if (a.has(2)) {
    const Value& separators = *a.get(2);
    if (!separators.is_sequence() || separators.items().size() != 2 ||
        !separators.items()[0].is(Kind::string) || !separators.items()[1].is(Kind::string))
      throw Failure("tojson(): separators must be two strings (item separator, key separator)");
    format.separators.emplace(separators.items()[0].as_string(), separators.items()[1].as_string());
  }
  format.sort_keys = a.flag(3, false);
  return Value::string(to_json(v, format));
}

Value trim_filter(const Value& v, const CallArgs& args) {
  const Bound a("trim", args, {"chars"});
  return Value::string(strip(to_str(v), a.optional_string(0), true, true));
}

Value unique_filter(const Value& v, const CallArgs& args) {
  const Bound a("unique", args, {"case_sensitive", "attribute"});
  const bool case_sensitive = a.flag(0, false);
  List seen, out;
  for (const Value& item : iterate(v)) {
    Value key = a.has(1) ? attribute_path(item, to_str(*a.get(1))) : item;
    require_hashable(key);
    if (!case_sensitive && key.is(Kind::string)) key = Value::string(lower(key.as_string()));
    // Each item is compared with every kept one: quadratic, so each comparison is charged.
    spend_operations(static_cast<int64_t>(seen.size()) + 1);
    if (std::none_of(seen.begin(), seen.end(), [&](const Value& s) { return equals(s, key); })) {
      seen.push_back(std::move(key));
      out.push_back(item);
    }
  }
  return Value::list(std::move(out));
}

Value lower_filter(const Value& v, const CallArgs& a) {
  return text_filter(v, a, "lower", lower);
}
Value upper_filter(const Value& v, const CallArgs& a) {
  return text_filter(v, a, "upper", upper);
}
Value capitalize_filter(const Value& v, const CallArgs& a) {
  return text_filter(v, a, "capitalize", capitalize);
}
Value title_filter(const Value& v, const CallArgs& a) {
  return text_filter(v, a, "title", title_words);
}

struct NamedFilter {
  const char* name;
  Filter filter;
};

constexpr NamedFilter kFilters[] = {
    {"abs", abs_filter},
    {"capitalize", capitalize_filter},
    {"count", length_filter},
    {"d", default_filter},
    {"default", default_filter},
    {"first", first_filter},
    {"float", float_filter},
    {"indent", indent_filter},
    {"int", int_filter},
    {"items", items_filter},
    {"join", join_filter},
    {"last", last_filter},
    {"length", length_filter},
    {"list", list_filter},
    {"lower", lower_filter},
    {"map", map_filter},
    {"reject", reject_filter},
    {"rejectattr", rejectattr_filter},
    {"replace", replace_filter},
    {"reverse", reverse_filter},
    {"safe", safe_filter},
    {"select", select_filter},
    {"selectattr", selectattr_filter},
    {"sort", sort_filter},
    {"string", string_filter},
    {"title", title_filter},
    {"tojson", tojson_filter},
    {"trim", trim_filter},
    {"unique", unique_filter},
    {"upper", upper_filter},
};

const NamedFilter* find_filter(std::string_view name) {
  for (const NamedFilter& f : kFilters)
    if (name == f.name) return &f;
  return nullptr;
}

}  // namespace

bool is_filter(std::string_view name) {
  return find_filter(name) != nullptr;
}

std::string filter_names() {
  std::string out;
  for (const NamedFilter& f : kFilters) out += (out.empty() ? "" : ", ") + std::string(f.name);
  return out;
}

Value apply_filter(std::string_view name, const Value& operand, const CallArgs& args) {
  const NamedFilter* filter = find_filter(name);
  if (filter == nullptr) throw Failure(cat("no filter named '", name, "'"));
  return filter->filter(operand, args);
}

}  // namespace autotrain::data::jinja
