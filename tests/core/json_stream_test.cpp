// parse_json_streaming against nlohmann's own parser: the same DOM, less the streamed
// containers' elements, which arrive in document order.
#include "autotrain/core/json_stream.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace autotrain::json_stream_test {
namespace {

using nlohmann::json;
using Elements = std::vector<std::pair<std::string, json>>;

StreamedContainer collect(std::vector<std::string> path, bool object, Elements& into) {
  return {std::move(path), object,
          [&into](const std::string& key, json& value) { into.emplace_back(key, value); }};
}

const char* const kDocument = R"({
  "version": "1.0", "n": -3, "u": 7, "x": 0.5, "t": true, "none": null,
  "list": [1, [2, {"a": 3}], {"b": [4]}],
  "model": {"type": "BPE", "vocab": {"z": 0, "a": 1, "nested": {"k": [1, 2]}, "a": 5},
            "merges": ["a b", ["c", "d"], 7], "other": {"vocab": {"q": 1}}}
})";

TEST(JsonStream, WithNothingStreamedBuildsWhatNlohmannsParserBuilds) {
  EXPECT_EQ(parse_json_streaming(kDocument, {}), json::parse(kDocument));
  for (const char* text : {"[]", "{}", "3", "\"s\"", "null", "[[[{}]]]", R"({"a":{"a":{"a":1}}})"})
    EXPECT_EQ(parse_json_streaming(text, {}), json::parse(text)) << text;
}

TEST(JsonStream, HandsTheStreamedElementsOverInOrderAndLeavesTheContainersEmpty) {
  Elements vocab, merges;
  const json dom = parse_json_streaming(kDocument, {collect({"model", "vocab"}, true, vocab),
                                                    collect({"model", "merges"}, false, merges)});
  json expected = json::parse(kDocument);
  expected["model"]["vocab"] = json::object();
  expected["model"]["merges"] = json::array();
  EXPECT_EQ(dom, expected);  // model.other.vocab is not model.vocab: it stays
  const Elements vocab_expected = {
      {"z", 0}, {"a", 1}, {"nested", json{{"k", {1, 2}}}}, {"a", 5}};  // a repeated key twice
  EXPECT_EQ(vocab, vocab_expected);
  const Elements merges_expected = {{"", "a b"}, {"", json{"c", "d"}}, {"", 7}};
  EXPECT_EQ(merges, merges_expected);
}

TEST(JsonStream, StreamsTheRootAndOnlyAContainerOfTheKindAsked) {
  Elements root;
  EXPECT_EQ(parse_json_streaming(R"({"a": 1, "b": [2]})", {collect({}, true, root)}),
            json::object());
  EXPECT_EQ(root, (Elements{{"a", 1}, {"b", json{2}}}));
  Elements none;
  const char* text = R"({"model": {"vocab": [["a", 0.5]]}})";  // a list where an object is streamed
  EXPECT_EQ(parse_json_streaming(text, {collect({"model", "vocab"}, true, none)}),
            json::parse(text));
  EXPECT_TRUE(none.empty());
  // A path through a list is no path of keys.
  EXPECT_EQ(parse_json_streaming(R"([{"vocab": {"a": 1}}])", {collect({"vocab"}, true, none)}),
            json::parse(R"([{"vocab": {"a": 1}}])"));
  EXPECT_TRUE(none.empty());
}

TEST(JsonStream, ThrowsNlohmannsMessageForTextThatIsNotJson) {
  for (const char* text : {"", "{\"a\": 1", "[1, 2,]", "{} x", "{\"a\" 1}"}) {
    try {
      parse_json_streaming(text, {});
      ADD_FAILURE() << "no error for '" << text << "'";
    } catch (const JsonSyntaxError& error) {
      std::string expected;
      try {
        const json parsed = json::parse(text);
      } catch (const json::parse_error& theirs) {
        expected = theirs.what();
      }
      EXPECT_EQ(error.what(), expected) << text;
    }
  }
}

TEST(JsonStream, PassesOnWhatACallbackThrows) {
  StreamedContainer failing{{"v"}, true, [](const std::string& key, json&) {
                              if (key == "bad") throw std::runtime_error("bad entry");
                            }};
  EXPECT_THROW(parse_json_streaming(R"({"v": {"ok": 1, "bad": 2}})", {failing}),
               std::runtime_error);
}

}  // namespace
}  // namespace autotrain::json_stream_test
