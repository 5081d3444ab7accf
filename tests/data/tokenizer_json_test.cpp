// The tokenizer.json pipeline on small hand-made files, one behaviour per test; the real
// files of Llama 3, Qwen3 and Mistral are checked against Hugging Face's own tokenizers in
// tests/e2e/hf_tokenizers.sh.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "../../src/data/decoder.hpp"  // utf8_lossy, internal to the data layer
#include "autotrain/core/error.hpp"
#include "autotrain/data/text_input.hpp"
#include "autotrain/data/tokenizer.hpp"
#include "test_support.hpp"

namespace autotrain::data::tokenizer_json_test {
namespace {

using nlohmann::json;
using testing::error_of;
using Ids = std::vector<TokenId>;

// A character-level BPE (SentencePiece style): every letter of "abcdefghijklmnopqrstuvwxyz",
// "▁", and the merges ab, abc, ▁a; <unk> 0, <s> 1, </s> 2, byte tokens <0x00>..<0xFF> at 3..258.
json char_tokenizer() {
  json vocab = {{"<unk>", 0}, {"<s>", 1}, {"</s>", 2}};
  for (int byte = 0; byte < 256; ++byte) {
    char spelling[8];
    std::snprintf(spelling, sizeof(spelling), "<0x%02X>", byte);
    vocab[spelling] = 3 + byte;
  }
  int next = 259;
  for (char c = 'a'; c <= 'z'; ++c) vocab[std::string(1, c)] = next++;
  vocab["\u2581"] = next++;
  vocab["ab"] = next++;
  vocab["abc"] = next++;
  vocab["\u2581a"] = next++;
  return {{"added_tokens",
           {{{"id", 1}, {"content", "<s>"}, {"special", true}},
            {{"id", 2}, {"content", "</s>"}, {"special", true}}}},
          {"normalizer", nullptr},
          {"pre_tokenizer", nullptr},
          {"post_processor", nullptr},
          {"decoder", nullptr},
          {"model",
           {{"type", "BPE"},
            {"vocab", vocab},
            {"merges", {"a b", json::array({"ab", "c"}), "\u2581 a"}},
            {"byte_fallback", true},
            {"unk_token", "<unk>"}}}};
}

// Llama 2's and Mistral's normalizer: "▁" before the text, spaces as "▁".
json sentencepiece_normalizer() {
  return {{"type", "Sequence"},
          {"normalizers",
           {{{"type", "Prepend"}, {"prepend", "\u2581"}},
            {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}}}}};
}

class TokenizerJson : public ::testing::Test {
 protected:
  std::unique_ptr<Tokenizer> load(const json& tokenizer, const json& config = nullptr,
                                  bool parse_special_tokens = true) {
    testing::write_file(dir_ / "tokenizer.json", tokenizer.dump());
    if (!config.is_null()) testing::write_file(dir_ / "tokenizer_config.json", config.dump());
    return make_tokenizer(dir_.path().string(), {{}, parse_special_tokens});
  }
  std::string load_error(const json& tokenizer) {
    return error_of([&] { load(tokenizer); });
  }
  TokenId id(const std::string& spelling) const {
    return char_tokenizer()["model"]["vocab"][spelling].get<TokenId>();
  }
  testing::TempDir dir_;
};

TEST_F(TokenizerJson, MergesLowestRankFirstAndFallsBackToBytes) {
  const auto tokenizer = load(char_tokenizer());
  EXPECT_EQ(tokenizer->encode("abcab"), (Ids{id("abc"), id("ab")}));
  // "é" is not in the vocabulary: its two UTF-8 bytes become <0xC3> <0xA9>.
  EXPECT_EQ(tokenizer->encode("é"), (Ids{3 + 0xC3, 3 + 0xA9}));
  EXPECT_EQ(tokenizer->vocab_size(), id("\u2581a") + 1);
}

TEST_F(TokenizerJson, UnknownCharactersBecomeOneFusedUnkWithoutByteFallback) {
  json tokenizer = char_tokenizer();
  tokenizer["model"]["byte_fallback"] = false;
  tokenizer["model"]["fuse_unk"] = true;
  EXPECT_EQ(load(tokenizer)->encode("aééb"), (Ids{id("a"), 0, id("b")}));
  tokenizer["model"]["fuse_unk"] = false;
  EXPECT_EQ(load(tokenizer)->encode("aééb"), (Ids{id("a"), 0, 0, id("b")}));
}

TEST_F(TokenizerJson, SentencePieceNormalizerPrependsOnlyAtTheStartOfAText) {
  json tokenizer = char_tokenizer();
  tokenizer["normalizer"] = sentencepiece_normalizer();
  const auto loaded = load(tokenizer);
  EXPECT_EQ(loaded->encode("a b"), (Ids{id("\u2581a"), id("\u2581"), id("b")}));
  Ids continued;
  loaded->encode_append("a b", continued, TextPosition::continuation);
  EXPECT_EQ(continued, (Ids{id("a"), id("\u2581"), id("b")}));
  EXPECT_TRUE(loaded->cuts_at_newlines());  // no merge touches "\n"
}

TEST_F(TokenizerJson, MatchesSpecialTokensInTextUnlessTold) {
  EXPECT_EQ(load(char_tokenizer())->encode("a<s>b"), (Ids{id("a"), 1, id("b")}));
  const auto plain = load(char_tokenizer(), nullptr, false);
  const Ids ids = plain->encode("a<s>b");
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 1), 0);
  EXPECT_EQ(ids.size(), 5u);  // a, <, s, >, b (the brackets by byte fallback)
}

TEST_F(TokenizerJson, LstripAndRstripWidenAMatchOverWhitespace) {
  json tokenizer = char_tokenizer();
  tokenizer["added_tokens"][0]["lstrip"] = true;
  tokenizer["added_tokens"][1]["rstrip"] = true;
  const auto loaded = load(tokenizer);
  EXPECT_EQ(loaded->encode("a  <s>b"), (Ids{id("a"), 1, id("b")}));
  EXPECT_EQ(loaded->encode("a</s>  b"), (Ids{id("a"), 2, id("b")}));
  EXPECT_FALSE(loaded->cuts_at_newlines());  // an lstrip token could swallow a cut's newline
}

TEST_F(TokenizerJson, SingleWordTokensMatchOnlyBetweenNonWordCharacters) {
  json tokenizer = char_tokenizer();
  tokenizer["added_tokens"].push_back(
      {{"id", id("abc")}, {"content", "xyz"}, {"single_word", true}, {"special", false}});
  const auto loaded = load(tokenizer);
  EXPECT_EQ(loaded->encode("xyz"), (Ids{id("abc")}));
  EXPECT_EQ(loaded->encode("axyz"), (Ids{id("a"), id("x"), id("y"), id("z")}));
}

TEST_F(TokenizerJson, ARejectedSingleWordMatchIsDroppedAndMatchingResumesAfterIt) {
  // Leftmost-longest finds "ab" in "xab"; touching "x" it is no single word, and the shorter
  // "b" inside it is not looked for (Hugging Face's non-overlapping matches).
  json tokenizer = char_tokenizer();
  tokenizer["added_tokens"].push_back(
      {{"id", id("abc")}, {"content", "ab"}, {"single_word", true}, {"special", false}});
  tokenizer["added_tokens"].push_back({{"id", id("z")}, {"content", "b"}, {"special", false}});
  EXPECT_EQ(load(tokenizer)->encode("xab"), (Ids{id("x"), id("ab")}));
}

TEST_F(TokenizerJson, NormalizedAddedTokensAreMatchedAsTheNormalizerSpellsThem) {
  json tokenizer = char_tokenizer();
  tokenizer["normalizer"] = sentencepiece_normalizer();
  tokenizer["added_tokens"].push_back(
      {{"id", id("abc")}, {"content", "ab"}, {"normalized", true}, {"special", false}});
  // "x ab" -> "▁x▁ab": the token's content is normalized too ("▁ab"), so it takes the space.
  EXPECT_EQ(load(tokenizer)->encode("x ab"), (Ids{id("\u2581"), id("x"), id("abc")}));
}

TEST_F(TokenizerJson, MetaspaceDecoderDropsTheReplacementsOfTheFirstToken) {
  json tokenizer = char_tokenizer();
  tokenizer["decoder"] = {
      {"type", "Metaspace"}, {"replacement", "\u2581"}, {"prepend_scheme", "always"}};
  EXPECT_EQ(load(tokenizer)->decode(Ids{id("\u2581a"), id("\u2581a")}), "a a");
  tokenizer["decoder"]["replacement"] = "";
  EXPECT_NE(load_error(tokenizer).find("decoder.replacement: must be one character"),
            std::string::npos);
}

TEST(Utf8Lossy, ReplacesEachMaximalIllFormedSubsequenceOnce) {
  EXPECT_EQ(utf8_lossy("ok"), "ok");
  EXPECT_EQ(utf8_lossy("a\xF0\x9F\x98"), "a\uFFFD");            // a truncated 4-byte emoji
  EXPECT_EQ(utf8_lossy("\xFF\xFE"), "\uFFFD\uFFFD");            // two bytes that start nothing
  EXPECT_EQ(utf8_lossy("\xED\xA0\x80"), "\uFFFD\uFFFD\uFFFD");  // a surrogate: ED, then A0 80
}

TEST(SafeCut, IsAfterANewlineBetweenTwoNonWhitespaceCharactersOfAnyScript) {
  EXPECT_TRUE(is_safe_cut("x\ny", 2));
  EXPECT_TRUE(is_safe_cut("\u044f\n\u0431", 3));  // Cyrillic on both sides
  EXPECT_FALSE(is_safe_cut("x\n\u3000y", 2));     // an ideographic space follows
  EXPECT_FALSE(is_safe_cut("x \ny", 3));          // a space precedes
  EXPECT_FALSE(is_safe_cut("x\n\ny", 3));
  EXPECT_FALSE(is_safe_cut(std::string_view("x\n\xE3\x80", 4), 2));  // cut off by the buffer
}

TEST_F(TokenizerJson, SplitBehaviorsCutAsHuggingFaceDocumentsThem) {
  // HF's example, "the-final--countdown" split on "-"; the vocabulary spells every piece, so
  // with ignore_merges each piece is one id and the ids show the pieces.
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"Removed", {"the", "final", "countdown"}},
      {"Isolated", {"the", "-", "final", "-", "-", "countdown"}},
      {"MergedWithPrevious", {"the-", "final-", "-", "countdown"}},
      {"MergedWithNext", {"the", "-final", "-", "-countdown"}},
      {"Contiguous", {"the", "-", "final", "--", "countdown"}},
  };
  for (const auto& [behavior, pieces] : cases) {
    json vocab = {{"-", 0}};
    Ids expected;
    for (const auto& piece : pieces) {
      if (!vocab.contains(piece)) vocab[piece] = static_cast<int>(vocab.size());
      expected.push_back(vocab[piece].get<TokenId>());
    }
    for (const char c : std::string("thefinalcountdown"))
      if (!vocab.contains(std::string(1, c)))
        vocab[std::string(1, c)] = static_cast<int>(vocab.size());
    json tokenizer = {
        {"pre_tokenizer",
         {{"type", "Split"}, {"pattern", {{"String", "-"}}}, {"behavior", behavior}}},
        {"model",
         {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array()}, {"ignore_merges", true}}}};
    EXPECT_EQ(load(tokenizer)->encode("the-final--countdown"), expected) << behavior;
  }
}

TEST_F(TokenizerJson, TemplateAndConfigFrameDocuments) {
  json tokenizer = char_tokenizer();
  tokenizer["post_processor"] = {
      {"type", "TemplateProcessing"},
      {"single",
       {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
        {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
      {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}}}}};
  const auto loaded = load(tokenizer, {{"bos_token", "<s>"}, {"eos_token", "</s>"}});
  EXPECT_EQ(loaded->document_frame(false).prefix, Ids{1});
  EXPECT_EQ(loaded->document_frame(false).suffix, Ids{});
  EXPECT_EQ(loaded->document_frame(true).suffix, Ids{2});
  EXPECT_EQ(loaded->eot_token(), 2);
  EXPECT_EQ(loaded->stop_tokens(), Ids{2});
}

TEST_F(TokenizerJson, DecodesByteFallbackAndFusesAsMistralsDecoder) {
  json tokenizer = char_tokenizer();
  tokenizer["decoder"] = {
      {"type", "Sequence"},
      {"decoders",
       {{{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}}, {"content", " "}},
        {{"type", "ByteFallback"}},
        {{"type", "Fuse"}},
        {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}};
  const auto loaded = load(tokenizer);
  EXPECT_EQ(loaded->decode(Ids{id("\u2581a"), 3 + 0xC3, 3 + 0xA9, id("\u2581"), id("b")}), "aé b");
  EXPECT_EQ(loaded->decode(Ids{3 + 0xC3}), "\uFFFD");  // half a character
  EXPECT_NE(error_of([&] { loaded->decode(Ids{9999}); }).find("outside"), std::string::npos);
}

TEST_F(TokenizerJson, UnsupportedComponentNamesItsJsonPathAndType) {
  json tokenizer = char_tokenizer();
  tokenizer["pre_tokenizer"] = {
      {"type", "Sequence"},
      {"pretokenizers",
       {{{"type", "Metaspace"}, {"replacement", "\u2581"}}, {{"type", "Digits"}}}}};
  const std::string message = load_error(tokenizer);
  EXPECT_NE(message.find("pre_tokenizer.pretokenizers[1]: pre-tokenizer type 'Digits' is not "
                         "supported"),
            std::string::npos)
      << message;
  tokenizer = char_tokenizer();
  tokenizer["model"]["type"] = "WordPiece";
  EXPECT_NE(load_error(tokenizer).find("model: model type 'WordPiece'"), std::string::npos);
}

TEST_F(TokenizerJson, MergeOfATokenOutsideTheVocabularyIsNamed) {
  json tokenizer = char_tokenizer();
  tokenizer["model"]["merges"].push_back("q zz");
  const std::string message = load_error(tokenizer);
  EXPECT_NE(message.find("merges[3]: merge 'q zz' names a token (zz)"), std::string::npos)
      << message;
}

TEST_F(TokenizerJson, BadVocabularyAndMergeEntriesAreNamedAfterTheModelsType) {
  json tokenizer = char_tokenizer();
  tokenizer["model"]["vocab"]["zz"] = -4;
  std::string message = load_error(tokenizer);
  EXPECT_NE(message.find("model.vocab: id of 'zz' must be an integer in [0, 16777216), got -4"),
            std::string::npos)
      << message;
  tokenizer["model"]["type"] = "WordPiece";  // the type is checked first, as before streaming
  EXPECT_NE(load_error(tokenizer).find("model: model type 'WordPiece'"), std::string::npos);
  tokenizer = char_tokenizer();
  tokenizer["model"]["merges"].push_back("abc");
  tokenizer["model"]["merges"].push_back(json{"a", 1});
  message = load_error(tokenizer);
  EXPECT_NE(message.find("model.merges[3]: expected \"left right\", got \"abc\""),
            std::string::npos)
      << message;
  tokenizer = char_tokenizer();
  tokenizer["model"]["vocab"] = json::array();
  EXPECT_NE(load_error(tokenizer).find("model.vocab: expected an object token -> id"),
            std::string::npos);
}

TEST_F(TokenizerJson, TruncatedFileIsNotValidJsonNamingTheFile) {
  const std::string text = char_tokenizer().dump();
  testing::write_file(dir_ / "tokenizer.json", text.substr(0, text.size() / 2));
  const std::string message = error_of([&] { make_tokenizer((dir_ / "tokenizer.json").string()); });
  EXPECT_NE(message.find("tokenizer.json: not valid JSON"), std::string::npos) << message;
}

TEST_F(TokenizerJson, RefusesInvalidUtf8NamingTheByteOffset) {
  const auto loaded = load(char_tokenizer());
  EXPECT_NE(error_of([&] { loaded->encode("ab\xC3(x"); }).find("not valid UTF-8 at byte offset 2"),
            std::string::npos);
  // An encoded UTF-16 surrogate (CESU-8) is not UTF-8 either.
  EXPECT_NE(error_of([&] { loaded->encode("a\xED\xA0\x80"); }).find("at byte offset 1"),
            std::string::npos);
}

TEST_F(TokenizerJson, AFolderWithoutTokenizerJsonSaysWhatIsMissing) {
  const std::string message = error_of([&] { make_tokenizer(dir_.path().string()); });
  EXPECT_NE(message.find("has no tokenizer.json"), std::string::npos) << message;
  EXPECT_NE(error_of([] { make_tokenizer("/no/such/tokenizer.json"); }).find("does not exist"),
            std::string::npos);
}

}  // namespace
}  // namespace autotrain::data::tokenizer_json_test
