// Preference pairs (data/preference.hpp): TRL's tokenization and truncation, AutoTrain's chat
// rendering, the prepared files and their reuse, the pair order, the trainers' rows, and errors
// that name the file, row and column.
#include "autotrain/data/preference.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "autotrain/core/error.hpp"
#include "autotrain/core/ignore_target.hpp"
#include "autotrain/data/chat_template.hpp"
#include "autotrain/data/sampler.hpp"
#include "autotrain/data/tokenizer.hpp"
#include "test_support.hpp"

namespace autotrain::data::preference_test {
namespace {

namespace fs = std::filesystem;
using testing::error_of;
using testing::source_path;
using testing::TempDir;
using testing::write_file;
using Ids = std::vector<TokenId>;

// A tokenizer.json over ASCII (one token per byte: id = byte + 1, no merges) with <s> = 0 and
// </s> = 1, and a template that puts <s> before every text (Llama's); optionally a pad token.
fs::path write_ascii_tokenizer(const fs::path& dir, bool with_pad = false) {
  nlohmann::json vocab = {{"<s>", 0}, {"</s>", 1}};
  for (int c = 1; c < 128; ++c) vocab[std::string(1, static_cast<char>(c))] = c + 1;
  nlohmann::json added = {{{"id", 0}, {"content", "<s>"}, {"special", true}},
                          {{"id", 1}, {"content", "</s>"}, {"special", true}}};
  if (with_pad) added.push_back({{"id", 129}, {"content", "<pad>"}, {"special", true}});
  const nlohmann::json tokenizer = {
      {"added_tokens", added},
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single", {{{"SpecialToken", {{"id", "<s>"}}}}, {{"Sequence", {{"id", "A"}}}}}},
        {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {0}}}}}}}},
      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", nlohmann::json::array()}}}};
  write_file(dir / "tokenizer.json", tokenizer.dump());
  write_file(dir / "tokenizer_config.json", with_pad
                                                ? R"({"eos_token": "</s>", "pad_token": "<pad>"})"
                                                : R"({"eos_token": "</s>"})");
  return dir;
}

Ids ascii(std::string_view text) {
  Ids ids;
  for (const char c : text) ids.push_back(c + 1);
  return ids;
}

Ids operator+(Ids a, const Ids& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

constexpr TokenId kBos = 0, kEos = 1;

PreferenceOptions options_for(const fs::path& data_path, const fs::path& output,
                              const std::string& tokenizer) {
  PreferenceOptions options;
  options.prepare.data_path = data_path;
  options.prepare.output_dir = output;
  options.prepare.tokenizer = tokenizer;
  options.prepare.gpt2_dir = source_path("data/gpt2");
  options.prepare.text_column = "chosen";
  options.prepare.show_progress = false;
  options.prepare.threads = 2;
  return options;
}

std::unique_ptr<Tokenizer> gpt2() {
  return make_tokenizer("gpt2", {source_path("data/gpt2")});
}

// TRL's own example (DPOTrainer.tokenize_row's docstring): GPT-2 adds no BOS, each completion
// ends with <|endoftext|>, and max_prompt_length / max_completion_length of 3 cut nothing here.
TEST(PreferenceTokens, MatchTrlsTokenizeRowExampleOnGpt2) {
  PreferenceOptions options;
  options.max_prompt_length = 3;
  options.max_completion_length = 3;
  const PairTokens pair = tokenize_pair({"The sky is", " blue", " green"}, *gpt2(), options);
  EXPECT_EQ(pair.prompt, (Ids{464, 6766, 318}));
  EXPECT_EQ(pair.chosen, (Ids{4171, 50256}));
  EXPECT_EQ(pair.rejected, (Ids{4077, 50256}));
  EXPECT_FALSE(pair.prompt_truncated);
  EXPECT_EQ(pair.completions_truncated, 0);
}

// The ids of Hugging Face's tokenizers (@lenml/tokenizers 3.7.2) for a Llama 2 tokenizer.json
// (the fuzz seed, Prepend + byte fallback, a template adding <s>), printed by
// tests/data/hf_reference/pair_reference.mjs with tokenizer_config.json {"bos_token": "<s>",
// "eos_token": "</s>", "add_bos_token": true}.
TEST(PreferenceTokens, MatchHuggingFaceTokenizersOnALlama2TokenizerJson) {
  TempDir dir;
  const std::string seed =
      testing::read_file(source_path("tests/fuzz/corpus/tokenizer_json/llama2"));
  write_file(dir / "llama2/tokenizer.json", seed.substr(0, seed.find('\0')));
  write_file(dir / "llama2/tokenizer_config.json",
             R"({"bos_token": "<s>", "eos_token": "</s>", "add_bos_token": true})");
  const auto tokenizer = make_tokenizer((dir / "llama2").string());
  const PairTokens pair =
      tokenize_pair({"Question: why is the sky blue?\nAnswer:", " Rayleigh scattering.",
                     " It reflects the ocean."},
                    *tokenizer, {});
  EXPECT_EQ(pair.prompt, (Ids{401, 229, 153, 132, 84,  120, 104, 118, 119, 108, 114, 113, 61,
                              229, 153, 132, 122, 107, 124, 229, 153, 132, 108, 118, 229, 153,
                              132, 119, 107, 104, 229, 153, 132, 118, 110, 124, 229, 153, 132,
                              101, 111, 120, 104, 66,  13,  68,  113, 118, 122, 104, 117, 61}));
  EXPECT_EQ(pair.chosen,
            (Ids{229, 153, 132, 229, 153, 132, 85,  100, 124, 111, 104, 108, 106, 107, 229,
                 153, 132, 118, 102, 100, 119, 119, 104, 117, 108, 113, 106, 49,  402}));
  EXPECT_EQ(pair.rejected, (Ids{229, 153, 132, 229, 153, 132, 76,  119, 229, 153, 132, 117,
                                104, 105, 111, 104, 102, 119, 118, 229, 153, 132, 119, 107,
                                104, 229, 153, 132, 114, 102, 104, 100, 113, 49,  402}));
  // A prompt that starts with <s> already keeps one.
  EXPECT_EQ(tokenize_pair({"<s>Already there", " yes", " no"}, *tokenizer, {}).prompt,
            (Ids{401, 229, 153, 132, 68, 111, 117, 104, 100, 103, 124, 229, 153, 132, 119, 107, 104,
                 117, 104}));
}

TEST(PreferenceTokens, PutTheTemplatesBosBeforeThePromptOnce) {
  TempDir dir;
  const auto tokenizer = make_tokenizer(write_ascii_tokenizer(dir / "tok").string());
  const PairTokens pair = tokenize_pair({"ab", "c", "d"}, *tokenizer, {});
  EXPECT_EQ(pair.prompt, Ids{kBos} + ascii("ab"));
  EXPECT_EQ(pair.chosen, ascii("c") + Ids{kEos});
  EXPECT_EQ(pair.rejected, ascii("d") + Ids{kEos});
  EXPECT_EQ(tokenize_pair({"<s>ab", "c", "d"}, *tokenizer, {}).prompt, Ids{kBos} + ascii("ab"));
  EXPECT_EQ(tokenize_pair({"", "c", "d"}, *tokenizer, {}).prompt, Ids{kBos});
}

TEST(PreferenceTokens, KeepThePromptsEndAndTheCompletionsStart) {
  TempDir dir;
  const auto tokenizer = make_tokenizer(write_ascii_tokenizer(dir / "tok").string());
  PreferenceOptions options;
  options.max_prompt_length = 3;
  options.max_completion_length = 4;
  const PairTokens pair = tokenize_pair({"abcdef", "ghijkl", "mn"}, *tokenizer, options);
  EXPECT_EQ(pair.prompt, ascii("def"));  // <s>abcdef: its last 3
  EXPECT_TRUE(pair.prompt_truncated);
  EXPECT_EQ(pair.chosen, ascii("ghij"));  // ghijkl</s>: its first 4
  EXPECT_EQ(pair.rejected, ascii("mn") + Ids{kEos});
  EXPECT_EQ(pair.completions_truncated, 1);
}

TEST(PreferenceTokens, CutPromptPlusCompletionToMaxLengthAtTheEnd) {
  TempDir dir;
  const auto tokenizer = make_tokenizer(write_ascii_tokenizer(dir / "tok").string());
  PreferenceOptions options;
  options.max_length = 5;
  const PairTokens pair = tokenize_pair({"ab", "cdef", "g"}, *tokenizer, options);
  EXPECT_EQ(pair.prompt, Ids{kBos} + ascii("ab"));
  EXPECT_EQ(pair.chosen, ascii("cd"));
  EXPECT_EQ(pair.rejected, ascii("g") + Ids{kEos});
  EXPECT_EQ(pair.completions_truncated, 1);
  EXPECT_FALSE(pair.dropped);
}

TEST(PreferenceTokens, DropAPairWhosePromptFillsMaxLength) {
  TempDir dir;
  const auto tokenizer = make_tokenizer(write_ascii_tokenizer(dir / "tok").string());
  PreferenceOptions options;
  options.max_length = 3;
  EXPECT_TRUE(tokenize_pair({"ab", "c", "d"}, *tokenizer, options).dropped);  // <s>ab = 3
  EXPECT_FALSE(tokenize_pair({"a", "c", "d"}, *tokenizer, options).dropped);
}

TEST(PreferenceTokens, RewardModeTokenizesWholeSequencesWithSpecialTokens) {
  TempDir dir;
  const auto tokenizer = make_tokenizer(write_ascii_tokenizer(dir / "tok").string());
  PreferenceOptions options;
  options.reward = true;
  options.max_length = 4;
  const PairTokens pair = tokenize_pair({"", "abc", "<s>de"}, *tokenizer, options);
  EXPECT_TRUE(pair.prompt.empty());
  EXPECT_EQ(pair.chosen, Ids{kBos} + ascii("abc"));
  EXPECT_EQ(pair.rejected, Ids{kBos} + ascii("de"));  // the text's own <s> is not doubled
  EXPECT_FALSE(pair.dropped);
  EXPECT_TRUE(tokenize_pair({"", "abcd", "e"}, *tokenizer, options).dropped);  // 5 > 4
}

// What a split of pairs holds, read back through PairDataset.
struct ReadPair {
  Ids prompt, chosen, rejected;
  bool operator==(const ReadPair&) const = default;
};

std::vector<ReadPair> read_split(const PairSplit& split) {
  const PairDataset dataset(split);
  std::vector<ReadPair> pairs;
  for (uint64_t i = 0; i < dataset.num_pairs(); ++i) {
    pairs.push_back({dataset.ids(i, PairPart::prompt), dataset.ids(i, PairPart::chosen),
                     dataset.ids(i, PairPart::rejected)});
  }
  return pairs;
}

TEST(PreferencePrepare, WritesEveryPairAsTokenizedWithTheTruncationCounts) {
  TempDir dir;
  write_file(dir / "in/train.jsonl",
             "{\"prompt\": \"The sky is\", \"chosen\": \" blue\", \"rejected\": \" green\"}\n"
             "\n"
             "{\"prompt\": \"Grass is a plant that\", \"chosen\": \" grows\", "
             "\"rejected\": \" is very very purple\"}\n");
  write_file(dir / "in/valid.csv", "prompt,chosen,rejected\nHi,\" there\",\" you, too\"\n");
  PreferenceOptions options = options_for(dir / "in", dir / "out", "gpt2");
  options.max_prompt_length = 3;
  options.max_completion_length = 3;
  const PreparedPairs prepared = prepare_pairs(options);
  EXPECT_EQ(prepared.eos_token, 50256);
  EXPECT_EQ(prepared.pad_token, 50256);  // GPT-2 has no pad token: EOS, as TRL and AutoTrain
  EXPECT_EQ(prepared.vocab_size, 50257);
  ASSERT_NE(prepared.find("train"), nullptr);
  ASSERT_NE(prepared.find("valid"), nullptr);
  const PairSplit& train = *prepared.find("train");
  EXPECT_EQ(train.pairs, 2u);
  EXPECT_EQ(train.prompts_truncated, 1u);      // "Grass is a plant that" is 5 tokens
  EXPECT_EQ(train.completions_truncated, 1u);  // " is very very purple" + EOS is 5
  const auto tokenizer = gpt2();
  const auto expect = [&](const PairText& text) {
    const PairTokens pair = tokenize_pair(text, *tokenizer, options);
    return ReadPair{pair.prompt, pair.chosen, pair.rejected};
  };
  EXPECT_EQ(
      read_split(train),
      (std::vector<ReadPair>{expect({"The sky is", " blue", " green"}),
                             expect({"Grass is a plant that", " grows", " is very very purple"})}));
  EXPECT_EQ(read_split(*prepared.find("valid")),
            (std::vector<ReadPair>{expect({"Hi", " there", " you, too"})}));
}

TEST(PreferencePrepare, ReusesThePairsUntilAnOptionChanges) {
  TempDir dir;
  write_file(dir / "in/train.jsonl",
             "{\"prompt\": \"a\", \"chosen\": \"b\", \"rejected\": \"c\"}\n");
  PreferenceOptions options = options_for(dir / "in", dir / "out", "gpt2");
  EXPECT_FALSE(prepare_pairs_if_needed(options).reused);
  const PreparedPairs again = prepare_pairs_if_needed(options);
  EXPECT_TRUE(again.reused);
  EXPECT_EQ(read_split(*again.find("train")).size(), 1u);
  options.max_prompt_length = 7;
  EXPECT_FALSE(prepare_pairs_if_needed(options).reused);
  fs::remove(dir / "out/train_pairs.idx");
  EXPECT_FALSE(prepare_pairs_if_needed(options).reused);
  // The token shards of sft (manifest.json, train_000000.bin) are other files.
  EXPECT_FALSE(fs::exists(dir / "out/manifest.json"));
  EXPECT_TRUE(fs::exists(dir / "out" / kPairsManifestName));
}

TEST(PreferencePrepare, CarvesTheLastPairsOfASingleFileIntoTheValidSplit) {
  TempDir dir;
  std::string rows;
  for (int i = 0; i < 10; ++i)
    rows +=
        "{\"prompt\": \"p" + std::to_string(i) + "\", \"chosen\": \"c\", \"rejected\": \"r\"}\n";
  write_file(dir / "pairs.jsonl", rows);
  PreferenceOptions options = options_for(dir / "pairs.jsonl", dir / "out", "byte");
  options.prepare.valid_fraction = 0.3;
  const PreparedPairs prepared = prepare_pairs(options);
  const auto train = read_split(*prepared.find("train"));
  const auto valid = read_split(*prepared.find("valid"));
  ASSERT_EQ(train.size(), 7u);
  ASSERT_EQ(valid.size(), 3u);
  EXPECT_EQ(train[6].prompt, (Ids{'p', '6'}));
  EXPECT_EQ(valid[0].prompt, (Ids{'p', '7'}));
  EXPECT_EQ(valid[2].prompt, (Ids{'p', '9'}));
  EXPECT_EQ(valid[2].chosen, (Ids{'c', 0}));  // byte's EOS is 0
}

TEST(PreferencePrepare, CountsAndDropsPairsWhosePromptFillsMaxLength) {
  TempDir dir;
  write_file(dir / "in/train.jsonl",
             "{\"prompt\": \"abcdef\", \"chosen\": \"x\", \"rejected\": \"y\"}\n"
             "{\"prompt\": \"a\", \"chosen\": \"xyz\", \"rejected\": \"y\"}\n");
  PreferenceOptions options = options_for(dir / "in", dir / "out", "byte");
  options.max_length = 3;
  const PreparedPairs prepared = prepare_pairs(options);
  const PairSplit& train = *prepared.find("train");
  EXPECT_EQ(train.pairs, 1u);
  EXPECT_EQ(train.pairs_dropped, 1u);
  EXPECT_EQ(train.completions_truncated, 1u);
  EXPECT_EQ(read_split(train)[0].chosen, (Ids{'x', 'y'}));
  EXPECT_EQ(read_pairs_manifest(dir / "out").find("train")->pairs_dropped, 1u);
  options.max_length = 1;
  EXPECT_NE(error_of([&] { prepare_pairs(options); }).find("all 2 were dropped"),
            std::string::npos);
}

// AutoTrain's apply_chat_template for dpo/orpo: the prompt is chosen without its last message,
// each completion its last message rendered alone; zephyr gets an empty system message first.
TEST(PreferenceChat, RendersAsAutoTrainDoesForDpo) {
  TempDir dir;
  write_file(
      dir / "in/train.jsonl",
      R"({"chosen": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}], )"
      R"("rejected": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Go"}]})"
      "\n");
  PreferenceOptions options = options_for(dir / "in", dir / "out", "byte");
  options.prepare.chat_template = "chatml";
  const auto train = read_split(*prepare_pairs(options).find("train"));
  ASSERT_EQ(train.size(), 1u);
  const auto bytes = [](std::string_view text) { return Ids(text.begin(), text.end()); };
  EXPECT_EQ(train[0].prompt, bytes("<|im_start|>user\nHi<|im_end|>\n"));
  EXPECT_EQ(train[0].chosen, bytes("<|im_start|>assistant\nHello<|im_end|>\n") + Ids{0});
  EXPECT_EQ(train[0].rejected, bytes("<|im_start|>assistant\nGo<|im_end|>\n") + Ids{0});

  options.prepare.chat_template = "zephyr";
  const auto zephyr = read_split(*prepare_pairs(options).find("train"));
  EXPECT_EQ(zephyr[0].prompt, bytes("<|system|>\n</s>\n<|user|>\nHi</s>\n"));
  EXPECT_EQ(zephyr[0].chosen, bytes("<|assistant|>\nHello</s>\n") + Ids{0});
}

TEST(PreferenceChat, RewardModeRendersEachConversationWhole) {
  TempDir dir;
  // A CSV cell holds the conversation as JSON.
  write_file(dir / "in/train.csv",
             "chosen,rejected\n"
             "\"[{\"\"role\"\": \"\"user\"\", \"\"content\"\": \"\"Hi\"\"}, {\"\"role\"\": "
             "\"\"assistant\"\", \"\"content\"\": \"\"Hello\"\"}]\","
             "\"[{\"\"role\"\": \"\"user\"\", \"\"content\"\": \"\"Hi\"\"}]\"\n");
  PreferenceOptions options = options_for(dir / "in", dir / "out", "byte");
  options.prepare.chat_template = "chatml";
  options.reward = true;
  const auto train = read_split(*prepare_pairs(options).find("train"));
  const auto bytes = [](std::string_view text) { return Ids(text.begin(), text.end()); };
  EXPECT_TRUE(train[0].prompt.empty());
  EXPECT_EQ(train[0].chosen,
            bytes("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello<|im_end|>\n"));
  EXPECT_EQ(train[0].rejected, bytes("<|im_start|>user\nHi<|im_end|>\n"));
}

TEST(PreferenceChat, APromptColumnOfMessagesComesBeforeChosensTurns) {
  TempDir dir;
  write_file(dir / "in/train.jsonl", R"({"prompt": [{"role": "user", "content": "Hi"}], )"
                                     R"("chosen": [{"role": "assistant", "content": "Hello"}], )"
                                     R"("rejected": [{"role": "assistant", "content": "Go"}]})"
                                     "\n");
  PreferenceOptions options = options_for(dir / "in", dir / "out", "byte");
  options.prepare.chat_template = "chatml";
  const auto train = read_split(*prepare_pairs(options).find("train"));
  EXPECT_EQ(train[0].prompt, Ids(std::string_view("<|im_start|>user\nHi<|im_end|>\n").begin(),
                                 std::string_view("<|im_start|>user\nHi<|im_end|>\n").end()));
}

TEST(PreferenceErrors, NameTheFileRowAndColumn) {
  TempDir dir;
  PreferenceOptions options = options_for(dir / "in", dir / "out", "byte");
  write_file(dir / "in/train.jsonl",
             "{\"prompt\": \"a\", \"chosen\": \"b\", \"rejected\": \"c\"}\n"
             "{\"prompt\": \"a\", \"chosen\": 3, \"rejected\": \"c\"}\n");
  std::string message = error_of([&] { prepare_pairs(options); });
  EXPECT_NE(message.find("train.jsonl:2: column 'chosen' (text_column) is number"),
            std::string::npos)
      << message;

  write_file(dir / "in/train.jsonl",
             "{\"prompt\": \"a\", \"chosen\": \"b\", \"rejectd\": \"c\"}\n");
  message = error_of([&] { prepare_pairs(options); });
  EXPECT_NE(message.find("train.jsonl:1: no column 'rejected'"), std::string::npos) << message;
  EXPECT_NE(message.find("rejected_text_column"), std::string::npos) << message;

  fs::remove(dir / "in/train.jsonl");
  write_file(dir / "in/train.csv", "question,chosen,rejected\na,b,c\n");
  message = error_of([&] { prepare_pairs(options); });
  EXPECT_NE(message.find("train.csv has no column 'prompt'"), std::string::npos) << message;
  EXPECT_NE(message.find("--prompt-text-column"), std::string::npos) << message;

  write_file(dir / "in/train.csv", "prompt,chosen,rejected\nx,\"[1]\",c\n");
  options.prepare.chat_template = "chatml";
  message = error_of([&] { prepare_pairs(options); });
  EXPECT_NE(message.find("train.csv:2: column 'chosen' (text_column): message 1 is a number"),
            std::string::npos)
      << message;
}

TEST(PreferenceErrors, AListWithoutChatTemplatePointsToIt) {
  TempDir dir;
  write_file(dir / "in/train.jsonl",
             R"({"prompt": "a", "chosen": [{"role": "user", "content": "b"}], "rejected": "c"})"
             "\n");
  const std::string message =
      error_of([&] { prepare_pairs(options_for(dir / "in", dir / "out", "byte")); });
  EXPECT_NE(message.find("train.jsonl:1: column 'chosen' (text_column) holds a list"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("chat_template"), std::string::npos) << message;
}

TEST(PreferenceRows, LayChosenThenRejectedRowsWithTargetsOnTheCompletions) {
  TempDir dir;
  const fs::path tokenizer = write_ascii_tokenizer(dir / "tok", true);
  write_file(dir / "in/train.jsonl",
             "{\"prompt\": \"ab\", \"chosen\": \"c\", \"rejected\": \"de\"}\n"
             "{\"prompt\": \"\", \"chosen\": \"fg\", \"rejected\": \"h\"}\n");
  const PreparedPairs prepared =
      prepare_pairs(options_for(dir / "in", dir / "out", tokenizer.string()));
  EXPECT_EQ(prepared.pad_token, 129);
  const PairDataset dataset(*prepared.find("train"));
  constexpr int T = 6;
  const std::vector<uint64_t> pairs = {1, 0};  // B = 2
  std::vector<int32_t> inputs(4 * T), targets(4 * T), lengths(4);
  load_pair_rows(dataset, pairs, T, inputs, targets, lengths);
  const int32_t P = 129, I = kIgnoreTarget;
  const auto c = [](char ch) { return static_cast<int32_t>(ch + 1); };
  // Row 0: pair 1 chosen = <s> f g </s>; row 1: pair 0 chosen = <s> a b c </s>;
  // row 2: pair 1 rejected = <s> h </s>; row 3: pair 0 rejected = <s> a b d e </s>.
  EXPECT_EQ(inputs, (std::vector<int32_t>{kBos, c('f'), c('g'), kEos,   P,      P,  //
                                          kBos, c('a'), c('b'), c('c'), kEos,   P,  //
                                          kBos, c('h'), kEos,   P,      P,      P,  //
                                          kBos, c('a'), c('b'), c('d'), c('e'), kEos}));
  EXPECT_EQ(targets, (std::vector<int32_t>{c('f'), c('g'), kEos,   I,      I,    I,  //
                                           I,      I,      c('c'), kEos,   I,    I,  //
                                           c('h'), kEos,   I,      I,      I,    I,  //
                                           I,      I,      c('d'), c('e'), kEos, I}));
  EXPECT_EQ(lengths, (std::vector<int32_t>{4, 5, 3, 6}));
  EXPECT_EQ(dataset.max_sequence_length(), 6u);
  std::vector<int32_t> narrow(4 * 5), narrow_targets(4 * 5);
  EXPECT_NE(error_of([&] {
              load_pair_rows(dataset, pairs, 5, narrow, narrow_targets, lengths);
            }).find("longer than the rows' 5"),
            std::string::npos);
}

TEST(PreferenceRows, RewardRowsCarryTargetsOnEveryToken) {
  TempDir dir;
  write_file(dir / "in/train.jsonl", "{\"chosen\": \"ab\", \"rejected\": \"c\"}\n");
  PreferenceOptions options = options_for(dir / "in", dir / "out", "byte");
  options.reward = true;
  const PairDataset dataset(*prepare_pairs(options).find("train"));
  EXPECT_TRUE(dataset.reward());
  std::vector<int32_t> inputs(2 * 3), targets(2 * 3), lengths(2);
  const std::vector<uint64_t> pairs = {0};
  load_pair_rows(dataset, pairs, 3, inputs, targets, lengths);
  EXPECT_EQ(inputs, (std::vector<int32_t>{'a', 'b', 0, 'c', 0, 0}));
  EXPECT_EQ(targets, (std::vector<int32_t>{'b', kIgnoreTarget, kIgnoreTarget,  //
                                           kIgnoreTarget, kIgnoreTarget, kIgnoreTarget}));
  EXPECT_EQ(lengths, (std::vector<int32_t>{2, 1}));
}

// A step's G pairs are the same set for any split of G into ranks and micro-steps, and each
// rank's micro-batch is whole pairs.
TEST(PreferenceOrder, AStepsPairsDoNotDependOnTheWorldSize) {
  const uint64_t pairs = 100;
  const auto step_pairs = [&](uint64_t world, uint64_t accumulation, int step) {
    std::multiset<uint64_t> seen;
    for (uint64_t rank = 0; rank < world; ++rank) {
      Sampler sampler = Sampler::over_items(pairs,
                                            {.batch_size = 2,
                                             .gradient_accumulation = accumulation,
                                             .world_size = world,
                                             .rank = rank,
                                             .seed = 3},
                                            "preference pairs");
      for (int s = 0; s < step; ++s) sampler.advance();
      std::vector<uint64_t> items(2);
      for (uint64_t m = 0; m < accumulation; ++m) {
        sampler.micro_batch_items(m, items);
        seen.insert(items.begin(), items.end());
      }
    }
    return seen;
  };
  for (int step = 0; step < 15; ++step) {  // 12 steps of 8 per epoch: crosses into epoch 1
    const auto single = step_pairs(1, 4, step);
    EXPECT_EQ(single.size(), 8u);
    EXPECT_EQ(std::set<uint64_t>(single.begin(), single.end()).size(), 8u);
    EXPECT_EQ(step_pairs(2, 2, step), single) << "step " << step;
    EXPECT_EQ(step_pairs(4, 1, step), single) << "step " << step;
  }
  const std::string message = error_of([] {
    Sampler::over_items(5, {.batch_size = 2, .gradient_accumulation = 4}, "preference pairs");
  });
  EXPECT_NE(message.find("has 5 preference pairs, but one optimizer step needs 8 preference pairs"),
            std::string::npos)
      << message;
}

TEST(PreferenceCheck, DryRunFindsTheColumnsWithoutTokenizing) {
  TempDir dir;
  write_file(dir / "in/train.jsonl",
             "{\"prompt\": \"a\", \"chosen\": \"b\", \"rejected\": \"c\"}\n");
  PreferenceOptions options = options_for(dir / "in", dir / "out", "gpt2");
  const PairsCheck check = check_pair_inputs(options);
  EXPECT_EQ(check.vocab_size, 50257);
  EXPECT_NE(check.summary.find("to be tokenized into"), std::string::npos) << check.summary;
  EXPECT_FALSE(fs::exists(dir / "out" / kPairsManifestName));
  options.rejected_column = "worse";
  EXPECT_NE(error_of([&] { check_pair_inputs(options); }).find("no column 'worse'"),
            std::string::npos);
}

}  // namespace
}  // namespace autotrain::data::preference_test
