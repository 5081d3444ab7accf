#include "autotrain/data/tokenizer.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "autotrain/core/error.hpp"
#include "autotrain/core/timer.hpp"
#include "autotrain/data/unicode.hpp"
#include "test_support.hpp"

namespace autotrain::data::tokenizer_test {
namespace {

using testing::fixture;
using testing::source_path;

// Loading the full GPT-2 vocabulary takes a fraction of a second; every test shares one.
const Tokenizer& gpt2() {
  static const std::unique_ptr<Tokenizer> tokenizer = [] {
    Timer timer;
    auto loaded = make_tokenizer("gpt2", {source_path("data/gpt2")});
    std::printf("gpt2 vocabulary loaded in %.3f s\n", timer.seconds());
    return loaded;
  }();
  return *tokenizer;
}

struct Vector {
  std::string text;
  std::vector<TokenId> ids;
};

std::vector<Vector> reference_vectors() {
  std::ifstream in(fixture("fixtures/encode_vectors.json"));
  const nlohmann::json vectors = nlohmann::json::parse(in);
  std::vector<Vector> out;
  for (const auto& vector : vectors) {
    out.push_back(
        {vector.at("text").get<std::string>(), vector.at("ids").get<std::vector<TokenId>>()});
  }
  return out;
}

TEST(Gpt2Tokenizer, EncodesEveryReferenceVectorExactly) {
  const auto vectors = reference_vectors();
  ASSERT_GE(vectors.size(), 10u);
  for (const auto& vector : vectors) {
    EXPECT_EQ(gpt2().encode(vector.text), vector.ids) << "text: " << vector.text;
  }
}

TEST(Gpt2Tokenizer, DecodesEveryReferenceVectorBackToItsText) {
  for (const auto& vector : reference_vectors()) {
    EXPECT_EQ(gpt2().decode(vector.ids), vector.text);
  }
}

TEST(Gpt2Tokenizer, HasTheGpt2VocabularyAndEndOfText) {
  EXPECT_EQ(gpt2().vocab_size(), 50257);
  EXPECT_EQ(gpt2().eot_token(), 50256);
  EXPECT_EQ(gpt2().decode(std::vector<TokenId>{50256}), "<|endoftext|>");
  EXPECT_EQ(gpt2().name(), "gpt2");
}

TEST(Gpt2Tokenizer, MatchesEndOfTextWrittenInTextAsHuggingFaceDoes) {
  const auto ids = gpt2().encode("a<|endoftext|>b");
  EXPECT_EQ(ids, (std::vector<TokenId>{64, 50256, 65}));
  EXPECT_EQ(gpt2().decode(ids), "a<|endoftext|>b");
}

TEST(Gpt2Tokenizer, EncodesEndOfTextAsOrdinaryCharactersWithoutParsingSpecialTokens) {
  const auto plain = make_tokenizer("gpt2", {source_path("data/gpt2"), false});
  const auto ids = plain->encode("a<|endoftext|>b");
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 50256), 0);
  EXPECT_EQ(plain->decode(ids), "a<|endoftext|>b");
}

TEST(Gpt2Tokenizer, RefusesInvalidUtf8NamingTheByteOffset) {
  const std::string text = "ok \xff\xfe broken";
  try {
    gpt2().encode(text);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("not valid UTF-8 at byte offset 3"), std::string::npos)
        << error.what();
  }
}

TEST(Gpt2Tokenizer, GivesTheSameIdsFromManyThreads) {
  const std::string text =
      testing::read_file(source_path("data/tinyshakespeare.txt")).substr(0, 20000);
  const auto expected = gpt2().encode(text);
  std::vector<std::vector<TokenId>> results(4);
  std::vector<std::thread> threads;
  for (auto& result : results) threads.emplace_back([&] { result = gpt2().encode(text); });
  for (auto& thread : threads) thread.join();
  for (const auto& result : results) EXPECT_EQ(result, expected);
}

TEST(Gpt2Tokenizer, RejectsIdsOutsideTheVocabulary) {
  EXPECT_THROW(gpt2().decode(std::vector<TokenId>{50257}), Error);
}

TEST(Gpt2Tokenizer, MissingVocabularyFolderNamesTheFile) {
  testing::TempDir empty;
  try {
    make_tokenizer("gpt2", {empty.path()});
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("encoder.json"), std::string::npos) << error.what();
  }
}

TEST(ByteTokenizer, EncodesBytesAndUsesNulAsEndOfText) {
  const auto tokenizer = make_tokenizer("byte");
  EXPECT_EQ(tokenizer->vocab_size(), 256);
  EXPECT_EQ(tokenizer->eot_token(), 0);
  const std::string text = "héllo\n";
  const auto ids = tokenizer->encode(text);
  ASSERT_EQ(ids.size(), text.size());
  EXPECT_EQ(ids[1], 0xC3);
  EXPECT_EQ(tokenizer->decode(ids), text);
  EXPECT_THROW(tokenizer->decode(std::vector<TokenId>{256}), Error);
}

TEST(TokenizerFactory, UnknownNameSuggestsTheClosest) {
  try {
    make_tokenizer("gpt3");
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("did you mean 'gpt2'"), std::string::npos)
        << error.what();
  }
}

TEST(Unicode, ClassifiesLettersNumbersAndSpacesBeyondAscii) {
  EXPECT_TRUE(unicode::is_letter(0xE9));      // é
  EXPECT_TRUE(unicode::is_letter(0x4E2D));    // 中
  EXPECT_FALSE(unicode::is_letter(0x1F680));  // 🚀
  EXPECT_TRUE(unicode::is_number(0x0663));    // Arabic-Indic three
  EXPECT_TRUE(unicode::is_number(0x00BD));    // ½ (No)
  EXPECT_TRUE(unicode::is_whitespace(0x3000));
  EXPECT_FALSE(unicode::is_whitespace(0x200B));  // zero width space is not White_Space
}

}  // namespace
}  // namespace autotrain::data::tokenizer_test
