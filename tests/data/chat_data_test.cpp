// Conversations into shards: the loss-mask files, the dataset and sampler reading them, and
// prepare rendering text_column's messages with a chat template (data/chat_format.hpp).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "autotrain/core/error.hpp"
#include "autotrain/core/ignore_target.hpp"
#include "autotrain/data/chat_format.hpp"
#include "autotrain/data/loss_mask.hpp"
#include "autotrain/data/prepare.hpp"
#include "autotrain/data/sampler.hpp"
#include "autotrain/data/shard.hpp"
#include "autotrain/data/tokenizer.hpp"
#include "test_support.hpp"

namespace autotrain::data::chat_data_test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::TempDir;
using testing::write_file;

void write_mask(const fs::path& path, const std::vector<uint8_t>& flags) {
  MaskWriter writer(path);
  writer.append(flags);
  writer.close();
}

std::vector<uint8_t> read_mask(const fs::path& path, uint64_t tokens) {
  std::vector<uint8_t> flags(tokens);
  MaskReader(path, tokens).copy(0, flags);
  return flags;
}

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

TEST(LossMask, RoundTripsFlagsBitPackedAfterAShardSizedHeader) {
  TempDir dir;
  const std::vector<uint8_t> flags = {1, 0, 0, 1, 1, 1, 0, 1, 0, 1, 1, 0, 1};
  write_mask(dir / "train_000000.mask", flags);
  EXPECT_EQ(fs::file_size(dir / "train_000000.mask"), kShardHeaderBytes + 2);
  EXPECT_EQ(read_mask(dir / "train_000000.mask", flags.size()), flags);
  const std::string bytes = testing::read_file(dir / "train_000000.mask");
  int32_t header[3];
  std::memcpy(header, bytes.data(), sizeof(header));
  EXPECT_EQ(header[0], kMaskMagic);
  EXPECT_EQ(header[1], kMaskVersion);
  EXPECT_EQ(header[2], 13);
  EXPECT_EQ(static_cast<uint8_t>(bytes[kShardHeaderBytes]), 0b10111001);

  truncate_mask(dir / "train_000000.mask", 5);
  EXPECT_EQ(read_mask(dir / "train_000000.mask", 5),
            std::vector<uint8_t>(flags.begin(), flags.begin() + 5));
  EXPECT_NE(error_of([&] {
              MaskReader(dir / "train_000000.mask", 6);
            }).find("covers 5 tokens but its shard holds 6"),
            std::string::npos);
  EXPECT_EQ(mask_path(dir / "valid_000003.bin"), dir / "valid_000003.mask");
}

TEST(LossMask, TheDatasetMasksTargetsAcrossShardsAndCountsThem) {
  TempDir dir;
  write_shard(shard_path(dir.path(), "train", 0), std::vector<uint16_t>{10, 11, 12, 13, 14});
  write_shard(shard_path(dir.path(), "train", 1), std::vector<uint16_t>{15, 16, 17, 18});
  write_mask(mask_path(shard_path(dir.path(), "train", 0)), {0, 0, 1, 1, 0});
  write_mask(mask_path(shard_path(dir.path(), "train", 1)), {1, 0, 1, 1});
  const TokenDataset dataset = TokenDataset::open(dir.path(), "train");
  ASSERT_TRUE(dataset.has_loss_mask());
  EXPECT_EQ(dataset.loss_tokens(0, 9), 5u);
  EXPECT_EQ(dataset.loss_tokens(3, 4), 2u);

  // Windows of block_size 4: window 1 is tokens [4, 9): inputs 14..17, targets 15..18.
  std::vector<int32_t> inputs(4), targets(4);
  load_window(dataset, 4, 1, inputs, targets);
  EXPECT_EQ(inputs, (std::vector<int32_t>{14, 15, 16, 17}));
  EXPECT_EQ(targets, (std::vector<int32_t>{15, kIgnoreTarget, 17, 18}));
  load_window(dataset, 4, 0, inputs, targets);
  EXPECT_EQ(targets, (std::vector<int32_t>{kIgnoreTarget, 12, 13, kIgnoreTarget}));

  SamplerOptions options;
  options.block_size = 4;
  options.batch_size = 2;
  const Sampler sampler(dataset.num_tokens(), options);
  EXPECT_EQ(sampler.loss_targets_in_step(dataset), 5u);  // both windows: 2 + 3

  fs::remove(mask_path(shard_path(dir.path(), "train", 1)));
  EXPECT_NE(error_of([&] {
              TokenDataset::open(dir.path(), "train");
            }).find("train_000001.mask is missing"),
            std::string::npos);
}

TEST(LossMask, WithoutMasksEveryTargetCarriesLoss) {
  TempDir dir;
  write_shard(shard_path(dir.path(), "train", 0), std::vector<uint16_t>{1, 2, 3, 4, 5});
  const TokenDataset dataset = TokenDataset::open(dir.path(), "train");
  EXPECT_FALSE(dataset.has_loss_mask());
  std::vector<int32_t> inputs(4), targets(4);
  load_window(dataset, 4, 0, inputs, targets);
  EXPECT_EQ(targets, (std::vector<int32_t>{2, 3, 4, 5}));
  EXPECT_EQ(dataset.loss_tokens(0, 5), 5u);
}

// One token per ASCII byte (id = byte + 1), <s> = 0 and </s> = 1 special, and a chat template in
// tokenizer_config.json in the style of Llama 3's (contents trimmed, bos_token first).
fs::path write_chat_tokenizer(const fs::path& dir) {
  json vocab = {{"<s>", 0}, {"</s>", 1}};
  for (int c = 1; c < 128; ++c) vocab[std::string(1, static_cast<char>(c))] = c + 1;
  const json tokenizer = {
      {"added_tokens",
       {{{"id", 0}, {"content", "<s>"}, {"special", true}},
        {{"id", 1}, {"content", "</s>"}, {"special", true}}}},
      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array()}}}};
  write_file(dir / "tokenizer.json", tokenizer.dump());
  const json config = {
      {"bos_token", "<s>"},
      {"eos_token", "</s>"},
      {"chat_template",
       "{{ bos_token }}{% for m in messages %}[{{ m['role'] }}] {{ m['content'] | trim }}"
       "{% if m['role'] == 'assistant' %}{{ eos_token }}{% endif %}\n{% endfor %}"}};
  write_file(dir / "tokenizer_config.json", config.dump());
  return dir;
}

PrepareOptions chat_options(const fs::path& dir, const std::string& chat_template,
                            bool completions_only) {
  PrepareOptions options;
  options.data_path = dir / "in";
  options.output_dir = dir / "out";
  options.tokenizer = (dir / "tok").string();
  options.show_progress = false;
  options.valid_split = "";
  options.chat_template = chat_template;
  options.completions_only = completions_only;
  return options;
}

const char* kConversations =
    R"({"messages": [{"role": "user", "content": "Hi?"}, {"role": "assistant", "content": " Yes. "}]})"
    "\n"
    R"({"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "A"}, {"role": "assistant", "content": "B"}, {"role": "user", "content": "C"}, {"role": "assistant", "content": "D"}]})"
    "\n";

// The tokens spelled one by one (the test tokenizer has no decoder, which would join them with
// spaces).
std::string spell(const Tokenizer& tokenizer, const std::vector<int32_t>& ids) {
  std::string text;
  for (const int32_t id : ids) text += tokenizer.decode(std::vector<int32_t>{id});
  return text;
}

// The text of the tokens of `split` that carry loss (as targets), and all of it.
std::pair<std::string, std::string> loss_text(const fs::path& dir, const Tokenizer& tokenizer) {
  const TokenDataset dataset = TokenDataset::open(dir, "train");
  std::vector<int32_t> tokens(dataset.num_tokens());
  dataset.copy(0, tokens);
  std::vector<int32_t> carrying;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (dataset.loss_tokens(i, 1) == 1) carrying.push_back(tokens[i]);
  }
  return {spell(tokenizer, carrying), spell(tokenizer, tokens)};
}

TEST(ChatData, RendersConversationsWithTheTokenizersTemplate) {
  TempDir dir;
  write_chat_tokenizer(dir / "tok");
  write_file(dir / "in/train.jsonl", kConversations);
  PrepareOptions options = chat_options(dir.path(), "tokenizer", false);
  options.text_column = "messages";
  prepare(options);
  const auto tokenizer = make_tokenizer(options.tokenizer);
  const auto [carrying, all] = loss_text(dir / "out", *tokenizer);
  // No post-processor prefix: the template writes <s>; </s> after each document (add_eos_token).
  // trim_blocks, as transformers renders: the newline after {% endif %} goes.
  EXPECT_EQ(all,
            "<s>[user] Hi?[assistant] Yes.</s></s>"
            "<s>[system] Be brief.[user] A[assistant] B</s>[user] C[assistant] D</s></s>");
  EXPECT_EQ(carrying, all);  // no masks: every token
  EXPECT_FALSE(fs::exists(dir / "out/train_000000.mask"));
}

TEST(ChatData, CompletionsOnlyMasksEverythingButTheAssistantTurns) {
  TempDir dir;
  write_chat_tokenizer(dir / "tok");
  write_file(dir / "in/train.jsonl", kConversations);
  PrepareOptions options = chat_options(dir.path(), "tokenizer", true);
  options.text_column = "messages";
  prepare(options);
  ASSERT_TRUE(fs::exists(dir / "out/train_000000.mask"));
  const auto tokenizer = make_tokenizer(options.tokenizer);
  // The trimmed contents and the eos_token right after each.
  EXPECT_EQ(loss_text(dir / "out", *tokenizer).first, "Yes.</s>B</s>D</s>");
}

TEST(ChatData, BuiltInChatmlFromCsvCellsAndACarvedValidSplitKeepTheirMasks) {
  TempDir dir;
  write_chat_tokenizer(dir / "tok");
  std::string csv = "text\n";
  for (int i = 0; i < 20; ++i) {
    const json messages = {{{"role", "user"}, {"content", "q" + std::to_string(i)}},
                           {{"role", "assistant"}, {"content", "a" + std::to_string(i)}}};
    std::string cell = messages.dump();
    std::string quoted;
    for (const char c : cell) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
    csv += "\"" + quoted + "\"\n";
  }
  write_file(dir / "in.csv", csv);
  PrepareOptions options = chat_options(dir.path(), "chatml", true);
  options.data_path = dir / "in.csv";
  options.valid_split = "valid";
  options.valid_fraction = 0.25;
  const PrepareResult result = prepare(options);
  ASSERT_EQ(result.splits.size(), 2u);
  for (const auto& split : result.splits) {
    for (const auto& shard : split.shards) {
      ASSERT_TRUE(fs::exists(mask_path(shard))) << shard;
      EXPECT_NO_THROW(MaskReader(mask_path(shard), ShardReader(shard).size()));
    }
  }
  const auto tokenizer = make_tokenizer(options.tokenizer);
  const auto [carrying, all] = loss_text(dir / "out", *tokenizer);
  EXPECT_TRUE(
      all.starts_with("<|im_start|>user\nq0<|im_end|>\n<|im_start|>assistant\na0<|im_end|>"))
      << all;
  EXPECT_TRUE(carrying.starts_with("a0<|im_end|>a1<|im_end|>a2<|im_end|>")) << carrying;
}

TEST(ChatData, ErrorsNameTheFileLineAndWhatToSet) {
  TempDir dir;
  write_chat_tokenizer(dir / "tok");
  write_file(dir / "in/train.jsonl", R"({"text": [{"role": "user", "content": "x"}]})"
                                     "\n");
  PrepareOptions plain = chat_options(dir.path(), "", false);
  EXPECT_NE(error_of([&] {
              prepare(plain);
            }).find("train.jsonl:1: column 'text' holds a list (of messages?): set chat_template"),
            std::string::npos);
  PrepareOptions masked = plain;
  masked.completions_only = true;
  EXPECT_NE(
      error_of([&] { prepare(masked); }).find("train_on_completions_only needs conversations"),
      std::string::npos);

  write_file(dir / "in/train.jsonl", R"({"text": "just text"})"
                                     "\n");
  EXPECT_NE(
      error_of([&] {
        prepare(chat_options(dir.path(), "chatml", false));
      }).find("train.jsonl:1: with chat_template the column must hold a JSON list of messages"),
      std::string::npos);
  write_file(dir / "in/train.jsonl", R"({"text": [{"content": "no role"}]})"
                                     "\n");
  EXPECT_NE(error_of([&] {
              prepare(chat_options(dir.path(), "chatml", false));
            }).find("train.jsonl:1: message 1 has no string 'role'"),
            std::string::npos);

  write_file(dir / "tok/tokenizer_config.json", R"({"eos_token": "</s>"})");
  EXPECT_NE(error_of([&] {
              prepare(chat_options(dir.path(), "tokenizer", false));
            }).find("has no chat template"),
            std::string::npos);
}

// The tokenizer's template over jsonl rows with a "messages" column.
PrepareOptions messages_options(const fs::path& dir, bool completions_only) {
  PrepareOptions options = chat_options(dir, "tokenizer", completions_only);
  options.text_column = "messages";
  return options;
}

TEST(ChatData, TemplateErrorsNameTheRowOnce) {
  TempDir dir;
  write_chat_tokenizer(dir / "tok");
  const json config = {{"eos_token", "</s>"},
                       {"chat_template", "{{ raise_exception('no system role') }}"}};
  write_file(dir / "tok/tokenizer_config.json", config.dump());
  write_file(dir / "in/train.jsonl", kConversations);
  const std::string error = error_of([&] { prepare(messages_options(dir.path(), false)); });
  const size_t at = error.find("train.jsonl:1: ");
  ASSERT_NE(at, std::string::npos) << error;
  EXPECT_EQ(error.find("train.jsonl:1: ", at + 1), std::string::npos) << error;
  EXPECT_NE(error.find("the template raised an error: no system role"), std::string::npos) << error;
}

const char* kUserOnly = R"({"messages": [{"role": "user", "content": "Hi?"}]})"
                        "\n";

TEST(ChatData, CompletionsOnlyWithoutAnAssistantTurnIsAnError) {
  TempDir dir;
  write_chat_tokenizer(dir / "tok");
  write_file(dir / "in/train.jsonl", std::string(kUserOnly) + kUserOnly);
  const std::string error = error_of([&] { prepare(messages_options(dir.path(), true)); });
  EXPECT_NE(error.find("split 'train' ("), std::string::npos) << error;
  EXPECT_NE(error.find("train.jsonl): no token carries loss: none of its 2 conversations has an "
                       "assistant turn"),
            std::string::npos)
      << error;
  // Without completion-only loss the same data trains on everything.
  EXPECT_NO_THROW(prepare(messages_options(dir.path(), false)));
}

TEST(ChatData, CompletionsOnlyWarnsAboutConversationsWithoutAnAssistantTurn) {
  TempDir dir;
  write_chat_tokenizer(dir / "tok");
  write_file(dir / "in/train.jsonl", std::string(kConversations) + kUserOnly);
  ::testing::internal::CaptureStderr();
  prepare(messages_options(dir.path(), true));
  const std::string warnings = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(warnings.find("1 of 3 conversations have no assistant turn and train on nothing"),
            std::string::npos)
      << warnings;
}

}  // namespace
}  // namespace autotrain::data::chat_data_test
