// Hostile tokenizer.json files and inputs (issue 42): a Split regex that backtracks without
// bound fails fast naming itself, many added tokens cost no more than a few, and the real
// tokenizers' patterns give the same pieces whatever the text's length.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>

#include "../../src/data/added_tokens.hpp"  // the matcher, internal to the data layer
#include "../../src/data/regex.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/data/tokenizer.hpp"
#include "test_support.hpp"

namespace autotrain::data::tokenizer_limits_test {
namespace {

using nlohmann::json;
using testing::error_of;
using Ids = std::vector<TokenId>;
using Spans = std::vector<std::pair<size_t, size_t>>;

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A byte-level BPE without merges (ids 0..255 are the bytes) and the given pre-tokenizer.
json byte_tokenizer(const json& pre_tokenizer) {
  json vocab = json::object();
  for (int byte = 0; byte < 256; ++byte) {
    char spelling[8];
    std::snprintf(spelling, sizeof(spelling), "<0x%02X>", byte);
    vocab[spelling] = byte;
  }
  return {
      {"added_tokens", json::array()},
      {"normalizer", nullptr},
      {"pre_tokenizer", pre_tokenizer},
      {"post_processor", nullptr},
      {"decoder", nullptr},
      {"model",
       {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array()}, {"byte_fallback", true}}}};
}

json split(const std::string& regex) {
  return {{"type", "Split"}, {"pattern", {{"Regex", regex}}}, {"behavior", "Isolated"}};
}

class TokenizerLimits : public ::testing::Test {
 protected:
  std::unique_ptr<Tokenizer> load(const json& tokenizer) {
    testing::write_file(dir_ / "tokenizer.json", tokenizer.dump());
    return make_tokenizer(dir_.path().string());
  }
  testing::TempDir dir_;
};

TEST_F(TokenizerLimits, BacktrackingSplitRegexFailsFastNamingThePatternAndTheFile) {
  std::string prose;
  while (prose.size() < 200'000) prose += "The quick brown fox jumps over the lazy dog. ";
  std::string runs;
  while (runs.size() < 42'000) runs += std::string(20, 'a') + "b";
  const std::pair<std::string, std::string> cases[] = {
      {R"([\s\S]*(?!)|\S+|\s+)", prose},  // each match scans to the end of the text
      {R"((a+)+$)", runs},
  };
  for (const auto& [pattern, text] : cases) {
    const auto tokenizer = load(byte_tokenizer(split(pattern)));
    const auto start = std::chrono::steady_clock::now();
    const std::string message = error_of([&] { tokenizer->encode(text); });
    EXPECT_LT(seconds_since(start), 2.0) << pattern;
    EXPECT_NE(message.find("tokenizer.json: pre_tokenizer"), std::string::npos) << message;
    EXPECT_NE(message.find("the regex '" + pattern + "' needs more than"), std::string::npos)
        << message;
  }
}

// A back reference compares text in steps that PCRE2 does not count: refused when loading.
TEST_F(TokenizerLimits, BackReferenceInASplitRegexIsRefusedNamingIt) {
  const std::string message = error_of([&] { load(byte_tokenizer(split(R"((.*)\1\1\1$)"))); });
  EXPECT_NE(message.find("tokenizer.json: pre_tokenizer.pattern.Regex: the regex '(.*)\\1\\1\\1$' "
                         "holds a back reference"),
            std::string::npos)
      << message;
}

// The matches of a pattern on a text are those PCRE2 finds on the whole text, however long
// the text and its matches (each match reads a window of the text that doubles on demand).
TEST_F(TokenizerLimits, LongMatchesAndLookaheadsAreFoundAsOnTheWholeText) {
  const Regex gpt2(R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)",
                   "test");
  const std::string word(100'000, 'a');
  const std::string text = word + std::string(300, ' ') + "b" + std::string(70, ' ');
  Spans spans;
  gpt2.find_all(text, spans);
  const size_t spaces = word.size() + 299;
  EXPECT_EQ(spans, (Spans{{0, word.size()},
                          {word.size(), spaces},
                          {spaces, spaces + 2},
                          {spaces + 2, text.size()}}));
  const Regex at_end("x+$|\\w", "test");  // `$` needs the true end, not a window's
  spans.clear();
  gpt2.find_all(std::string(1000, ' '), spans);
  EXPECT_EQ(spans, (Spans{{0, 1000}}));
  spans.clear();
  at_end.find_all("ab" + std::string(500, 'x'), spans);
  EXPECT_EQ(spans, (Spans{{0, 1}, {1, 2}, {2, 502}}));
}

// Hugging Face's files hold up to hundreds of thousands of added tokens; matching looks them
// up as a trie, so tokenizing costs about the same with 200k of them as with two.
TEST_F(TokenizerLimits, ManyAddedTokensDoNotSlowTokenizing) {
  json tokenizer = byte_tokenizer(split(R"(\s+|\S+)"));
  for (int i = 0; i < 200'000; ++i) {
    char content[16];
    std::snprintf(content, sizeof(content), "w%06d", i);
    tokenizer["added_tokens"].push_back(
        {{"id", 256 + i}, {"content", content}, {"special", false}});
  }
  const auto loaded = load(tokenizer);
  EXPECT_EQ(loaded->encode("xw000042w1"), (Ids{'x', 256 + 42, 'w', '1'}));
  std::string text;
  while (text.size() < 100'000) text += "we wish w0123 wwww ";
  const auto start = std::chrono::steady_clock::now();
  const Ids ids = loaded->encode(text);
  EXPECT_LT(seconds_since(start), 2.0);  // matching one by one took over 10 s
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 256 + 12), 0);
}

using Cuts = std::vector<std::tuple<TokenId, size_t, size_t>>;  // id, begin, end

Cuts sections_of(const AddedTokenMatcher& matcher, std::string_view text) {
  std::vector<Section> sections;
  matcher.split(text, sections);
  Cuts cuts;
  for (const auto& section : sections) cuts.emplace_back(section.id, section.begin, section.end);
  return cuts;
}

TEST_F(TokenizerLimits, AddedTokensMatchLeftmostThenLongestThenFirstListed) {
  const AddedTokenMatcher matcher({{1, "ab"}, {2, "abc"}, {3, "bcd"}, {4, "abc"}, {5, "d"}});
  // At 0 "ab" and "abc" start: the longest, the first of the two "abc"; "bcd" starts later.
  EXPECT_EQ(sections_of(matcher, "xabcd"), (Cuts{{-1, 0, 1}, {2, 1, 4}, {5, 4, 5}}));
  EXPECT_EQ(sections_of(matcher, "abab"), (Cuts{{1, 0, 2}, {1, 2, 4}}));
  EXPECT_EQ(sections_of(matcher,
                        "\xff"
                        "a"),
            (Cuts{{-1, 0, 2}}));
}

}  // namespace
}  // namespace autotrain::data::tokenizer_limits_test
