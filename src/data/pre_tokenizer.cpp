#include "pre_tokenizer.hpp"

#include <algorithm>

#include "byte_level.hpp"
#include "regex.hpp"

namespace autotrain::data {
namespace {

using tokenizer_json::Json;
using tokenizer_json::path;
using Span = std::pair<size_t, size_t>;

// Appends the sub-spans of `span` found by `find` (offsets relative to the span) to `out`.
template <typename Find>
void split_spans(const Pieces& pieces, std::vector<Span>& out, Find&& find) {
  thread_local std::vector<Span> found;
  for (const auto& [begin, end] : pieces.spans) {
    found.clear();
    find(std::string_view(pieces.text).substr(begin, end - begin), found);
    for (const auto& [first, last] : found) out.emplace_back(begin + first, begin + last);
  }
}

enum class Behavior { removed, isolated, merged_with_previous, merged_with_next, contiguous };

Behavior parse_behavior(const std::string& name, const std::string& where) {
  if (name == "Removed") return Behavior::removed;
  if (name == "Isolated") return Behavior::isolated;
  if (name == "MergedWithPrevious") return Behavior::merged_with_previous;
  if (name == "MergedWithNext") return Behavior::merged_with_next;
  if (name == "Contiguous") return Behavior::contiguous;
  throw Error(cat(where, ": behavior '", name,
                  "' is not one of Removed, Isolated, MergedWithPrevious, MergedWithNext, "
                  "Contiguous"));
}

struct Segment {
  size_t begin, end;
  bool is_match;
};

// Hugging Face's split by a pattern: the segments (matches and the text between them) are
// kept, dropped or joined to a neighbour according to the behavior.
void apply_behavior(const std::vector<Segment>& segments, Behavior behavior,
                    std::vector<Span>& out) {
  const size_t first_out = out.size();
  bool previous_match = false;
  switch (behavior) {
    case Behavior::removed:
      for (const auto& s : segments)
        if (!s.is_match) out.emplace_back(s.begin, s.end);
      return;
    case Behavior::isolated:
      for (const auto& s : segments) out.emplace_back(s.begin, s.end);
      return;
    case Behavior::contiguous:
      for (const auto& s : segments) {
        if (s.is_match == previous_match && out.size() > first_out) {
          out.back().second = s.end;
        } else {
          out.emplace_back(s.begin, s.end);
        }
        previous_match = s.is_match;
      }
      return;
    case Behavior::merged_with_previous:
      for (const auto& s : segments) {
        if (s.is_match && !previous_match && out.size() > first_out) {
          out.back().second = s.end;
        } else {
          out.emplace_back(s.begin, s.end);
        }
        previous_match = s.is_match;
      }
      return;
    case Behavior::merged_with_next:
      for (size_t i = segments.size(); i-- > 0;) {
        const auto& s = segments[i];
        if (s.is_match && !previous_match && out.size() > first_out) {
          out.back().first = s.begin;
        } else {
          out.emplace_back(s.begin, s.end);
        }
        previous_match = s.is_match;
      }
      std::reverse(out.begin() + static_cast<long>(first_out), out.end());
      return;
  }
}

// Matches of a literal or a regex, then the behavior, with `invert` swapping what counts as
// a match.
class Splitter {
 public:
  Splitter(std::string literal, std::unique_ptr<Regex> regex, Behavior behavior, bool invert)
      : literal_(std::move(literal)),
        regex_(std::move(regex)),
        behavior_(behavior),
        invert_(invert) {}

  void split(std::string_view text, std::vector<Span>& out) const {
    thread_local std::vector<Span> matches;
    thread_local std::vector<Segment> segments;
    matches.clear();
    segments.clear();
    find(text, matches);
    size_t done = 0;
    for (const auto& [begin, end] : matches) {
      if (begin > done) segments.push_back({done, begin, invert_});
      segments.push_back({begin, end, !invert_});
      done = end;
    }
    if (done < text.size()) segments.push_back({done, text.size(), invert_});
    apply_behavior(segments, behavior_, out);
  }
  std::string pattern() const { return regex_ ? regex_->pattern() : literal_; }

 private:
  void find(std::string_view text, std::vector<Span>& matches) const {
    if (regex_) {
      regex_->find_all(text, matches);
      return;
    }
    if (literal_.empty()) return;
    for (size_t at = text.find(literal_); at != std::string_view::npos;
         at = text.find(literal_, at + literal_.size()))
      matches.emplace_back(at, at + literal_.size());
  }

  std::string literal_;
  std::unique_ptr<Regex> regex_;
  Behavior behavior_;
  bool invert_;
};

class ByteLevel final : public PreTokenizer {
 public:
  ByteLevel(bool add_prefix_space, bool use_regex)
      : add_prefix_space_(add_prefix_space),
        splitter_(use_regex ? std::make_unique<Splitter>(
                                  std::string(),
                                  std::make_unique<Regex>(byte_level::kGpt2Pattern,
                                                          "ByteLevel's GPT-2 pattern"),
                                  Behavior::isolated, false)
                            : nullptr) {}

  void split(Pieces& pieces, Pieces& scratch, TextPlace place) const override {
    if (add_prefix_space_) add_prefix_spaces(pieces, scratch, place);
    if (!splitter_) return;
    scratch.spans.clear();
    split_spans(pieces, scratch.spans, [&](std::string_view text, std::vector<Span>& out) {
      splitter_->split(text, out);
    });
    std::swap(pieces.spans, scratch.spans);
  }
  bool is_byte_level() const override { return true; }
  std::vector<std::string> patterns() const override {
    return splitter_ ? std::vector<std::string>{splitter_->pattern()} : std::vector<std::string>{};
  }

 private:
  // A space before every piece that does not start with one, as Hugging Face's ByteLevel.
  static void add_prefix_spaces(Pieces& pieces, Pieces& scratch, TextPlace place) {
    scratch.text.clear();
    scratch.spans.clear();
    for (size_t i = 0; i < pieces.spans.size(); ++i) {
      const auto [begin, end] = pieces.spans[i];
      const size_t start = scratch.text.size();
      const bool first_of_cut = i == 0 && place.continues_cut;
      if (!first_of_cut && (end == begin || pieces.text[begin] != ' ')) scratch.text.push_back(' ');
      scratch.text.append(pieces.text, begin, end - begin);
      scratch.spans.emplace_back(start, scratch.text.size());
    }
    std::swap(pieces, scratch);
  }

  bool add_prefix_space_;
  std::unique_ptr<Splitter> splitter_;  // GPT-2's pattern, when use_regex
};

class Split final : public PreTokenizer {
 public:
  Split(const Json& json, const std::string& where) : splitter_(make_splitter(json, where)) {}

  void split(Pieces& pieces, Pieces& scratch, TextPlace) const override {
    scratch.spans.clear();
    split_spans(pieces, scratch.spans,
                [&](std::string_view text, std::vector<Span>& out) { splitter_.split(text, out); });
    std::swap(pieces.spans, scratch.spans);
  }
  std::vector<std::string> patterns() const override { return {splitter_.pattern()}; }

 private:
  static Splitter make_splitter(const Json& json, const std::string& where) {
    const Json& pattern = tokenizer_json::member(json, "pattern", where);
    const Behavior behavior = parse_behavior(tokenizer_json::string_member(json, "behavior", where),
                                             path(where, "behavior"));
    const bool invert = tokenizer_json::bool_member(json, "invert", false, where);
    if (auto literal = tokenizer_json::optional_string(pattern, "String", path(where, "pattern")))
      return Splitter(*literal, nullptr, behavior, invert);
    return Splitter({},
                    std::make_unique<Regex>(
                        tokenizer_json::string_member(pattern, "Regex", path(where, "pattern")),
                        path(where, "pattern.Regex")),
                    behavior, invert);
  }

  Splitter splitter_;
};

// SentencePiece's word boundary: spaces become the replacement character ("▁"), which is
// prepended per the scheme, and with `split` each piece starts at a replacement character.
class Metaspace final : public PreTokenizer {
 public:
  enum class Prepend { always, first, never };
  Metaspace(std::string replacement, Prepend prepend, bool split)
      : replacement_(std::move(replacement)),
        prepend_(prepend),
        splitter_(replacement_, nullptr, Behavior::merged_with_next, false),
        split_(split) {}

  void split(Pieces& pieces, Pieces& scratch, TextPlace place) const override {
    scratch.text.clear();
    scratch.spans.clear();
    for (size_t i = 0; i < pieces.spans.size(); ++i) {
      const auto [begin, end] = pieces.spans[i];
      const std::string_view piece = std::string_view(pieces.text).substr(begin, end - begin);
      const size_t start = scratch.text.size();
      const bool at_start = i == 0 && !place.continues_cut;
      const bool prepend = prepend_ == Prepend::always  ? !(i == 0 && place.continues_cut)
                           : prepend_ == Prepend::first ? at_start && place.document_start
                                                        : false;
      // Spaces become the replacement first, so a piece starting with one gets no second.
      if (prepend && !piece.starts_with(' ') && !piece.starts_with(replacement_))
        scratch.text += replacement_;
      for (const char c : piece) {
        if (c == ' ') {
          scratch.text += replacement_;
        } else {
          scratch.text.push_back(c);
        }
      }
      scratch.spans.emplace_back(start, scratch.text.size());
    }
    std::swap(pieces, scratch);
    if (!split_) return;
    scratch.spans.clear();
    split_spans(pieces, scratch.spans,
                [&](std::string_view text, std::vector<Span>& out) { splitter_.split(text, out); });
    std::swap(pieces.spans, scratch.spans);
  }

 private:
  std::string replacement_;
  Prepend prepend_;
  Splitter splitter_;
  bool split_;
};

class Sequence final : public PreTokenizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<PreTokenizer>> steps) : steps_(std::move(steps)) {}
  void split(Pieces& pieces, Pieces& scratch, TextPlace place) const override {
    for (const auto& step : steps_) step->split(pieces, scratch, place);
  }
  bool is_byte_level() const override { return !steps_.empty() && steps_.back()->is_byte_level(); }
  std::vector<std::string> patterns() const override {
    std::vector<std::string> all;
    for (const auto& step : steps_) {
      for (auto& pattern : step->patterns()) all.push_back(std::move(pattern));
    }
    return all;
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

Metaspace::Prepend parse_prepend_scheme(const Json& json, const std::string& where) {
  if (auto scheme = tokenizer_json::optional_string(json, "prepend_scheme", where)) {
    if (*scheme == "always") return Metaspace::Prepend::always;
    if (*scheme == "first") return Metaspace::Prepend::first;
    if (*scheme == "never") return Metaspace::Prepend::never;
    throw Error(
        cat(path(where, "prepend_scheme"), ": '", *scheme, "' is not one of always, first, never"));
  }
  // Files written before prepend_scheme existed say add_prefix_space.
  return tokenizer_json::bool_member(json, "add_prefix_space", true, where)
             ? Metaspace::Prepend::always
             : Metaspace::Prepend::never;
}

std::unique_ptr<PreTokenizer> make_sequence(const Json& json, const std::string& where) {
  auto steps = tokenizer_json::component_list<PreTokenizer>(json, "pretokenizers", where,
                                                            make_pre_tokenizer);
  for (size_t i = 0; i + 1 < steps.size(); ++i) {
    AT_CHECK(
        !steps[i]->is_byte_level(), path(path(where, "pretokenizers"), i + 1),
        ": a pre-tokenizer after ByteLevel is not supported (ByteLevel must be the last step)");
  }
  return std::make_unique<Sequence>(std::move(steps));
}

}  // namespace

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const Json& json, const std::string& where) {
  if (json.is_null()) return nullptr;
  const std::string type = tokenizer_json::type_of(json, where);
  if (type == "ByteLevel") {
    return std::make_unique<ByteLevel>(
        tokenizer_json::bool_member(json, "add_prefix_space", true, where),
        tokenizer_json::bool_member(json, "use_regex", true, where));
  }
  if (type == "Split") return std::make_unique<Split>(json, where);
  if (type == "Metaspace") {
    std::string replacement = tokenizer_json::string_member(json, "replacement", where);
    AT_CHECK(!replacement.empty(), path(where, "replacement"), ": must be one character");
    return std::make_unique<Metaspace>(std::move(replacement), parse_prepend_scheme(json, where),
                                       tokenizer_json::bool_member(json, "split", true, where));
  }
  if (type == "Sequence") return make_sequence(json, where);
  tokenizer_json::unsupported(where, "pre-tokenizer", type,
                              "ByteLevel, Split, Metaspace, Sequence");
}

std::unique_ptr<PreTokenizer> make_gpt2_pre_tokenizer() {
  return std::make_unique<ByteLevel>(false, true);
}

}  // namespace autotrain::data
