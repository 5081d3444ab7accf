#include "autotrain/data/prepare.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "autotrain/core/error.hpp"
#include "autotrain/data/shard.hpp"
#include "autotrain/data/tokenizer.hpp"
#include "test_support.hpp"

namespace autotrain::data::prepare_test {
namespace {

namespace fs = std::filesystem;
using testing::source_path;
using testing::TempDir;
using testing::write_file;

PrepareOptions options_for(const fs::path& data_path, const fs::path& output,
                           const std::string& tokenizer) {
  PrepareOptions options;
  options.data_path = data_path;
  options.output_dir = output;
  options.tokenizer = tokenizer;
  options.gpt2_dir = source_path("data/gpt2");
  options.show_progress = false;
  return options;
}

std::vector<int32_t> split_tokens(const fs::path& dir, const std::string& split) {
  const TokenDataset dataset = TokenDataset::open(dir, split);
  std::vector<int32_t> tokens(dataset.num_tokens());
  dataset.copy(0, tokens);
  return tokens;
}

// About 300 KB of Shakespeare: more than one 256 KiB work unit, so several threads share it.
const std::string& shakespeare_excerpt() {
  static const std::string text =
      testing::read_file(source_path("data/tinyshakespeare.txt")).substr(0, 300000);
  return text;
}

// A tokenizer.json over the bytes of ASCII (one token each, no merges) with <s> and </s>, and a
// template that puts <s> before every text; with `lstrip`, </s> swallows the whitespace before
// it, so a cut after a newline is no longer safe.
fs::path write_ascii_tokenizer(const fs::path& dir, bool lstrip) {
  nlohmann::json vocab = {{"<s>", 0}, {"</s>", 1}};
  for (int c = 1; c < 128; ++c) vocab[std::string(1, static_cast<char>(c))] = c + 1;
  const nlohmann::json tokenizer = {
      {"added_tokens",
       {{{"id", 0}, {"content", "<s>"}, {"special", true}},
        {{"id", 1}, {"content", "</s>"}, {"special", true}, {"lstrip", lstrip}}}},
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single", {{{"SpecialToken", {{"id", "<s>"}}}}, {{"Sequence", {{"id", "A"}}}}}},
        {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {0}}}}}}}},
      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", nlohmann::json::array()}}}};
  write_file(dir / "tokenizer.json", tokenizer.dump());
  write_file(dir / "tokenizer_config.json", R"({"eos_token": "</s>"})");
  return dir;
}

TEST(Prepare, FramesTokenizerJsonDocumentsWithTheTemplateAndEosAfter) {
  TempDir dir;
  write_file(dir / "in/train.jsonl", "{\"text\": \"ab\"}\n{\"text\": \"c\"}\n");
  const auto tokenizer = write_ascii_tokenizer(dir / "tok", false);
  prepare(options_for(dir / "in", dir / "out", tokenizer.string()));
  const int32_t a = 'a' + 1, b = 'b' + 1, c = 'c' + 1;
  EXPECT_EQ(split_tokens(dir / "out", "train"), (std::vector<int32_t>{0, a, b, 1, 0, c, 1}));
}

TEST(Prepare, KeepsDocumentsWholeForATokenizerThatCannotBeCutAtNewlines) {
  TempDir dir;
  // 600 KB: cut into several work units, and several pieces by the .txt reader, unless the
  // tokenizer says no. Each "\n</s>" is one token with lstrip, two if the text is cut there.
  std::string text;
  while (text.size() < 600000) text += "line of text\n</s>x\n";
  write_file(dir / "in/train.txt", text);
  const auto tokenizer_dir = write_ascii_tokenizer(dir / "tok", true);
  const auto tokenizer = make_tokenizer(tokenizer_dir.string());
  ASSERT_FALSE(tokenizer->cuts_at_newlines());
  auto options = options_for(dir / "in", dir / "out", tokenizer_dir.string());
  options.threads = 2;
  options.add_eos_token = false;
  prepare(options);
  std::vector<TokenId> expected(1, 0);
  tokenizer->encode_append(text, expected, TextPosition::start);
  EXPECT_EQ(split_tokens(dir / "out", "train"), expected);
}

TEST(Prepare, InvalidUtf8NamesTheFileDocumentAndOffset) {
  TempDir dir;
  write_file(dir / "in/train/a.txt", "fine");
  write_file(dir / "in/train/b.txt", "ok \xff end");
  const std::string message =
      testing::error_of([&] { prepare(options_for(dir / "in", dir / "out", "gpt2")); });
  EXPECT_NE(message.find("b.txt, document 1: text is not valid UTF-8 at byte offset 3"),
            std::string::npos)
      << message;
}

TEST(Prepare, APreparedFolderGivenAsDataPathIsUsedAsItIs) {
  TempDir dir;
  write_file(dir / "in/train.jsonl", "{\"text\": \"ab\"}\n");
  prepare(options_for(dir / "in", dir / "prepared", "byte"));
  const auto result = prepare_if_needed(options_for(dir / "prepared", dir / "project", "byte"));
  EXPECT_TRUE(result.reused);
  ASSERT_NE(result.find("train"), nullptr);
  EXPECT_EQ(result.find("train")->shards.front(), dir / "prepared/train_000000.bin");
  EXPECT_FALSE(fs::exists(dir / "project"));
  const std::string message = testing::error_of(
      [&] { prepare_if_needed(options_for(dir / "prepared", dir / "project", "gpt2")); });
  EXPECT_NE(message.find("was prepared with the tokenizer byte, but this run's is gpt2"),
            std::string::npos)
      << message;
}

TEST(Prepare, WritesEotBeforeEachDocumentOfAJsonlSplit) {
  TempDir dir;
  write_file(dir / "in/train.jsonl", "{\"text\": \"ab\"}\n{\"text\": \"c\"}\n");
  write_file(dir / "in/valid.jsonl", "{\"text\": \"z\"}\n");
  const auto result = prepare(options_for(dir / "in", dir / "out", "byte"));
  EXPECT_EQ(split_tokens(dir / "out", "train"), (std::vector<int32_t>{0, 'a', 'b', 0, 'c'}));
  EXPECT_EQ(split_tokens(dir / "out", "valid"), (std::vector<int32_t>{0, 'z'}));
  ASSERT_EQ(result.splits.size(), 2u);
  EXPECT_EQ(result.find("train")->tokens, 5u);
}

TEST(Prepare, WithoutEosTokenConcatenatesDocuments) {
  TempDir dir;
  write_file(dir / "in/train.csv", "text\nab\nc\n");
  auto options = options_for(dir / "in", dir / "out", "byte");
  options.add_eos_token = false;
  prepare(options);
  EXPECT_EQ(split_tokens(dir / "out", "train"), (std::vector<int32_t>{'a', 'b', 'c'}));
  EXPECT_TRUE(list_shards(dir / "out", "valid").empty());  // folder input: nothing carved
}

TEST(Prepare, ShardsAreIdenticalForAnyThreadCountAndMatchWholeTextEncoding) {
  TempDir dir;
  write_file(dir / "corpus.txt", shakespeare_excerpt());
  auto options = options_for(dir / "corpus.txt", dir / "one", "gpt2");
  options.valid_fraction = 0.0;
  options.threads = 1;
  prepare(options);
  options.output_dir = dir / "three";
  options.threads = 3;
  prepare(options);
  EXPECT_EQ(testing::read_file(dir / "one/train_000000.bin"),
            testing::read_file(dir / "three/train_000000.bin"));

  const auto tokenizer = make_tokenizer("gpt2", {source_path("data/gpt2")});
  std::vector<TokenId> expected(1, tokenizer->eot_token());
  tokenizer->encode_append(shakespeare_excerpt(), expected, TextPosition::start);
  EXPECT_EQ(split_tokens(dir / "three", "train"), expected);
}

TEST(Prepare, CapsShardSizeAndCarvesTheValidTailOfASingleFile) {
  TempDir dir;
  const std::string text = "0123456789abcdefghij";  // byte tokenizer: 1 eot + 20 tokens
  write_file(dir / "corpus.txt", text);
  auto options = options_for(dir / "corpus.txt", dir / "out", "byte");
  options.shard_tokens = 4;
  options.valid_fraction = 0.25;  // floor(21 * 0.25) = 5 tokens
  const auto result = prepare(options);
  std::vector<int32_t> all{0};
  for (const char c : text) all.push_back(c);
  EXPECT_EQ(split_tokens(dir / "out", "train"), std::vector<int32_t>(all.begin(), all.end() - 5));
  EXPECT_EQ(split_tokens(dir / "out", "valid"), std::vector<int32_t>(all.end() - 5, all.end()));
  EXPECT_EQ(list_shards(dir / "out", "train").size(), 4u);  // 16 tokens in shards of 4
  EXPECT_EQ(list_shards(dir / "out", "valid").size(), 2u);  // 5 tokens: 4 + 1
  EXPECT_EQ(result.find("valid")->tokens, 5u);
  EXPECT_EQ(result.find("train")->shards.size(), 4u);
}

TEST(Prepare, SingleFileGetsATenPercentValidSplitByDefault) {
  TempDir dir;
  write_file(dir / "corpus.txt", std::string(99, 'x'));
  const auto result = prepare(options_for(dir / "corpus.txt", dir / "out", "byte"));
  EXPECT_EQ(result.find("valid")->tokens, 10u);  // floor(100 * 0.1)
  EXPECT_EQ(result.find("train")->tokens, 90u);
}

TEST(Prepare, ReplacesShardsLeftByAnEarlierPrepare) {
  TempDir dir;
  write_file(dir / "corpus.txt", std::string(40, 'x'));
  auto options = options_for(dir / "corpus.txt", dir / "out", "byte");
  options.valid_fraction = 0.0;
  options.shard_tokens = 8;
  prepare(options);
  EXPECT_EQ(list_shards(dir / "out", "train").size(), 6u);
  options.shard_tokens = 1000;
  prepare(options);
  EXPECT_EQ(list_shards(dir / "out", "train").size(), 1u);
}

TEST(Prepare, ReusesShardsWhenNothingChangedAndPreparesAgainOtherwise) {
  TempDir dir;
  write_file(dir / "in/train.txt", "hello world");
  auto options = options_for(dir / "in", dir / "out", "byte");
  EXPECT_FALSE(prepare_if_needed(options).reused);
  EXPECT_TRUE(prepare_if_needed(options).reused);

  write_file(dir / "in/train.txt", "hello there, world");  // new size and mtime
  auto changed = prepare_if_needed(options);
  EXPECT_FALSE(changed.reused);
  EXPECT_EQ(changed.find("train")->tokens, 19u);
  EXPECT_TRUE(prepare_if_needed(options).reused);

  options.tokenizer = "gpt2";  // another tokenizer
  EXPECT_FALSE(prepare_if_needed(options).reused);
  options.add_eos_token = false;  // another option
  EXPECT_FALSE(prepare_if_needed(options).reused);

  fs::resize_file(dir / "out/train_000000.bin", 1024);  // damaged shard
  EXPECT_FALSE(prepare_if_needed(options).reused);
  EXPECT_TRUE(prepare_if_needed(options).reused);
}

TEST(Prepare, ManifestRecordsTokenizerAndShards) {
  TempDir dir;
  write_file(dir / "in/train.txt", "abc");
  prepare(options_for(dir / "in", dir / "out", "byte"));
  const auto result = read_manifest(dir / "out");
  EXPECT_EQ(result.tokenizer, "byte");
  EXPECT_EQ(result.vocab_size, 256);
  ASSERT_EQ(result.splits.size(), 1u);
  EXPECT_EQ(result.splits[0].shards[0], dir / "out/train_000000.bin");
  EXPECT_EQ(result.splits[0].tokens, 4u);
}

TEST(Prepare, MissingRequiredValidSplitIsAnError) {
  TempDir dir;
  write_file(dir / "in/train.txt", "abc");
  auto options = options_for(dir / "in", dir / "out", "byte");
  options.require_valid_split = true;
  EXPECT_THROW(prepare(options), Error);
}

}  // namespace
}  // namespace autotrain::data::prepare_test
