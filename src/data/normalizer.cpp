#include "normalizer.hpp"

#include <utf8proc.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "regex.hpp"

namespace autotrain::data {
namespace {

using tokenizer_json::Json;
using tokenizer_json::path;

// Unicode canonical composition (utf8proc). ASCII is already NFC, so text without a byte
// >= 0x80 is left alone without a copy.
class Nfc final : public Normalizer {
 public:
  void normalize(std::string& text, bool) const override {
    if (std::all_of(text.begin(), text.end(), [](char c) { return (c & 0x80) == 0; })) return;
    utf8proc_uint8_t* composed = nullptr;
    const utf8proc_ssize_t length =
        utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                     static_cast<utf8proc_ssize_t>(text.size()), &composed,
                     static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
    AT_CHECK(length >= 0, "NFC normalizer: ", utf8proc_errmsg(length));
    text.assign(reinterpret_cast<const char*>(composed), static_cast<size_t>(length));
    std::free(composed);
  }
  bool touches_newlines() const override { return false; }
  bool touches_spaces() const override { return false; }
};

class Prepend final : public Normalizer {
 public:
  explicit Prepend(std::string prefix) : prefix_(std::move(prefix)) {}
  void normalize(std::string& text, bool continues_cut) const override {
    if (!text.empty() && !continues_cut) text.insert(0, prefix_);
  }
  bool touches_newlines() const override { return false; }
  bool touches_spaces() const override { return false; }

 private:
  std::string prefix_;
};

// Replace every non-overlapping occurrence, left to right, of a literal string or a regex.
class Replace final : public Normalizer {
 public:
  Replace(const Json& spec, const std::string& where)
      : content_(tokenizer_json::string_member(spec, "content", where)) {
    const Json& pattern = tokenizer_json::member(spec, "pattern", where);
    if (auto literal = tokenizer_json::optional_string(pattern, "String", path(where, "pattern"))) {
      literal_ = *literal;
      AT_CHECK(!literal_.empty(), path(where, "pattern.String"), ": must not be empty");
    } else {
      regex_ = std::make_unique<Regex>(
          tokenizer_json::string_member(pattern, "Regex", path(where, "pattern")),
          path(where, "pattern.Regex"));
    }
  }
  void normalize(std::string& text, bool) const override {
    thread_local std::vector<std::pair<size_t, size_t>> matches;
    matches.clear();
    if (regex_) {
      regex_->find_all(text, matches);
    } else {
      for (size_t at = text.find(literal_); at != std::string::npos;
           at = text.find(literal_, at + literal_.size()))
        matches.emplace_back(at, at + literal_.size());
    }
    if (matches.empty()) return;
    std::string out;
    out.reserve(text.size() + matches.size() * content_.size());
    size_t done = 0;
    for (const auto& [begin, end] : matches) {
      out.append(text, done, begin - done).append(content_);
      done = end;
    }
    out.append(text, done);
    text = std::move(out);
  }
  bool touches_spaces() const override {
    return regex_ != nullptr || literal_.find(' ') != std::string::npos ||
           content_.find(' ') != std::string::npos;
  }
  bool touches_newlines() const override {
    return regex_ != nullptr || literal_.find_first_of("\r\n") != std::string::npos ||
           content_.find_first_of("\r\n") != std::string::npos;
  }

 private:
  std::string literal_;
  std::unique_ptr<Regex> regex_;
  std::string content_;
};

class Sequence final : public Normalizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Normalizer>> steps) : steps_(std::move(steps)) {}
  void normalize(std::string& text, bool continues_cut) const override {
    for (const auto& step : steps_) step->normalize(text, continues_cut);
  }
  bool touches_spaces() const override {
    return std::any_of(steps_.begin(), steps_.end(),
                       [](const auto& step) { return step->touches_spaces(); });
  }
  bool touches_newlines() const override {
    return std::any_of(steps_.begin(), steps_.end(),
                       [](const auto& step) { return step->touches_newlines(); });
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> steps_;
};

}  // namespace

std::unique_ptr<Normalizer> make_normalizer(const Json& spec, const std::string& where) {
  if (spec.is_null()) return nullptr;
  const std::string type = tokenizer_json::type_of(spec, where);
  if (type == "NFC") return std::make_unique<Nfc>();
  if (type == "Prepend") {
    return std::make_unique<Prepend>(tokenizer_json::string_member(spec, "prepend", where));
  }
  if (type == "Replace") return std::make_unique<Replace>(spec, where);
  if (type == "Sequence") {
    return std::make_unique<Sequence>(
        tokenizer_json::component_list<Normalizer>(spec, "normalizers", where, make_normalizer));
  }
  tokenizer_json::unsupported(where, "normalizer", type, "NFC, Prepend, Replace, Sequence");
}

}  // namespace autotrain::data
