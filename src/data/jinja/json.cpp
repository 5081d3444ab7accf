#include "json.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "autotrain/core/error.hpp"
#include "autotrain/core/utf8.hpp"
#include "budget.hpp"

namespace autotrain::data::jinja {
namespace {

Value from_json_at(const nlohmann::ordered_json& json, int depth) {
  check_depth(depth);
  switch (json.type()) {
    case nlohmann::json::value_t::null:
      return Value::none();
    case nlohmann::json::value_t::boolean:
      return Value::boolean(json.get<bool>());
    case nlohmann::json::value_t::number_integer:
      return Value::integer(json.get<int64_t>());
    case nlohmann::json::value_t::number_unsigned: {
      const uint64_t value = json.get<uint64_t>();
      if (value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        throw Failure(cat("the integer ", value, " is beyond 64 bits (not supported)"));
      return Value::integer(static_cast<int64_t>(value));
    }
    case nlohmann::json::value_t::number_float:
      return Value::floating(json.get<double>());
    case nlohmann::json::value_t::string:
      return Value::string(json.get<std::string>());
    case nlohmann::json::value_t::array: {
      List items;
      items.reserve(json.size());
      for (const auto& item : json) items.push_back(from_json_at(item, depth + 1));
      return Value::list(std::move(items));
    }
    case nlohmann::json::value_t::object: {
      Dict dict;
      for (const auto& [key, item] : json.items()) dict.set(key, from_json_at(item, depth + 1));
      return Value::dict(std::move(dict));
    }
    default:
      throw Failure("JSON binary values are not supported");
  }
}

// Python's json string escaping: ensure_ascii escapes everything outside printable ASCII as
// \uXXXX (UTF-16 surrogate pairs beyond the BMP).
void append_string(std::string& out, const std::string& text, bool ensure_ascii) {
  out += '"';
  char escape[16];
  for (size_t pos = 0; pos < text.size();) {
    const utf8::Decoded d = utf8::decode_utf8(text, pos);
    const uint32_t c = d.code_point;
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (c < 0x20 || (ensure_ascii && c >= 0x7F && c <= 0xFFFF)) {
          std::snprintf(escape, sizeof(escape), "\\u%04x", c);
          out += escape;
        } else if (ensure_ascii && c > 0xFFFF) {
          const uint32_t v = c - 0x10000;
          std::snprintf(escape, sizeof(escape), "\\u%04x\\u%04x", 0xD800 + (v >> 10),
                        0xDC00 + (v & 0x3FF));
          out += escape;
        } else {
          out.append(text, pos, d.length);
        }
    }
    pos += d.length;
  }
  out += '"';
}

class JsonWriter {
 public:
  explicit JsonWriter(const JsonFormat& format) : format_(format) {
    if (format.separators) {
      item_separator_ = format.separators->first;
      key_separator_ = format.separators->second;
    } else {
      item_separator_ = format.indent ? "," : ", ";
    }
  }

  void write(const Value& value, int depth) {
    check_depth(depth);
    spend_operations();
    // A string's escapes at most sextuple it; what is written is checked before it grows.
    if (value.is(Kind::string)) check_bytes(out_.size() + value.as_string().size());
    switch (value.kind()) {
      case Kind::none:
        out_ += "null";
        break;
      case Kind::boolean:
        out_ += value.as_bool() ? "true" : "false";
        break;
      case Kind::integer:
        out_ += std::to_string(value.as_int());
        break;
      case Kind::floating:
        write_float(value.as_float());
        break;
      case Kind::string:
        append_string(out_, value.as_string(), format_.ensure_ascii);
        break;
      case Kind::list:
      case Kind::tuple:
        write_list(value.items(), depth);
        break;
      case Kind::dict:
        write_dict(value.as_dict(), depth);
        break;
      default:
        throw Failure(cat("Object of type ", type_name(value), " is not JSON serializable"));
    }
  }

  std::string take() { return std::move(out_); }

 private:
  void write_float(double v) {
    if (std::isnan(v))
      out_ += "NaN";
    else if (std::isinf(v))
      out_ += v > 0 ? "Infinity" : "-Infinity";
    else
      out_ += float_repr(v);
  }

  // Before each item of a container at `depth`: the separator, then the newline and indent.
  void begin_item(size_t index, int depth) {
    const size_t indent = format_.indent ? format_.indent->size() : 0;
    check_bytes(out_.size() + item_separator_.size() + 1 +
                saturating_product(indent, static_cast<size_t>(depth) + 1));
    if (index > 0) out_ += item_separator_;
    if (!format_.indent) return;
    out_ += '\n';
    for (int i = 0; i <= depth; ++i) out_ += *format_.indent;
  }

  void end_container(int depth, char close) {
    if (format_.indent) {
      out_ += '\n';
      for (int i = 0; i < depth; ++i) out_ += *format_.indent;
    }
    out_ += close;
  }

  void write_list(const List& items, int depth) {
    if (items.empty()) {
      out_ += "[]";
      return;
    }
    out_ += '[';
    for (size_t i = 0; i < items.size(); ++i) {
      begin_item(i, depth);
      write(items[i], depth + 1);
    }
    end_container(depth, ']');
  }

  void write_dict(const Dict& dict, int depth) {
    if (dict.size() == 0) {
      out_ += "{}";
      return;
    }
    std::vector<const std::pair<std::string, Value>*> entries;
    for (const auto& entry : dict.entries()) entries.push_back(&entry);
    if (format_.sort_keys)
      std::sort(entries.begin(), entries.end(),
                [](const auto* a, const auto* b) { return a->first < b->first; });
    out_ += '{';
    for (size_t i = 0; i < entries.size(); ++i) {
      begin_item(i, depth);
      append_string(out_, entries[i]->first, format_.ensure_ascii);
      out_ += key_separator_;
      write(entries[i]->second, depth + 1);
    }
    end_container(depth, '}');
  }

  const JsonFormat& format_;
  std::string item_separator_;
  std::string key_separator_ = ": ";
  std::string out_;
};

}  // namespace

Value from_json(const nlohmann::ordered_json& json) {
  return from_json_at(json, 0);
}

std::string to_json(const Value& value, const JsonFormat& format) {
  JsonWriter writer(format);
  writer.write(value, 0);
  return writer.take();
}

}  // namespace autotrain::data::jinja
