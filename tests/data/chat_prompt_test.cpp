// `generate --chat`'s prompt (data/chat_prompt.hpp): the user's and the system's messages
// rendered by the tokenizer folder's chat template up to the assistant's turn, and the tokens
// that end the reply (the end-of-text tokens and the template's own end-of-turn token).
#include "autotrain/data/chat_prompt.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "autotrain/core/error.hpp"
#include "test_support.hpp"

namespace autotrain::data::chat_prompt_test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::TempDir;
using testing::write_file;

constexpr TokenId kEos = 1;      // </s>
constexpr TokenId kTurnEnd = 2;  // <|eot|>

// One token per ASCII byte (id = byte + 3), the special tokens <s>, </s>, <|eot|>, <|im|> (0-3),
// and `chat_template` in tokenizer_config.json (none when empty).
fs::path write_chat_tokenizer(const fs::path& dir, const std::string& chat_template) {
  json vocab = {{"<s>", 0}, {"</s>", 1}, {"<|eot|>", 2}, {"<|im|>", 3}};
  for (int c = 1; c < 128; ++c) vocab[std::string(1, static_cast<char>(c))] = c + 3;
  json added = json::array();
  for (const char* token : {"<s>", "</s>", "<|eot|>", "<|im|>"})
    added.push_back({{"id", vocab[token]}, {"content", token}, {"special", true}});
  const json tokenizer = {
      {"added_tokens", added},
      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array()}}}};
  write_file(dir / "tokenizer.json", tokenizer.dump());
  json config = {{"bos_token", "<s>"}, {"eos_token", "</s>"}};
  if (!chat_template.empty()) config["chat_template"] = chat_template;
  write_file(dir / "tokenizer_config.json", config.dump());
  return dir;
}

// ChatML's shape with this tokenizer's spellings: each message ends with <|eot|> and a newline.
const char* kTemplate =
    "{{ bos_token }}{% for m in messages %}<|im|>{{ m['role'] }}\n{{ m['content'] }}<|eot|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im|>assistant\n{% endif %}";

bool has(const std::vector<TokenId>& ids, TokenId id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

TEST(ChatPrompt, RendersTheSystemAndUserMessagesUpToTheAssistantsTurn) {
  TempDir dir;
  const auto tokenizer = make_tokenizer(write_chat_tokenizer(dir.path(), kTemplate).string());
  const ChatPrompt prompt = chat_prompt(*tokenizer, "Be brief.", "Hi?");
  EXPECT_EQ(prompt.text,
            "<s><|im|>system\nBe brief.<|eot|>\n<|im|>user\nHi?<|eot|>\n<|im|>assistant\n");
  EXPECT_TRUE(has(prompt.turn_ends, kEos));
  EXPECT_TRUE(has(prompt.turn_ends, kTurnEnd));  // not the eos_token: found in the template
}

TEST(ChatPrompt, WithoutASystemTextThereIsNoSystemMessage) {
  TempDir dir;
  const auto tokenizer = make_tokenizer(write_chat_tokenizer(dir.path(), kTemplate).string());
  EXPECT_EQ(chat_prompt(*tokenizer, "", "Hi?").text,
            "<s><|im|>user\nHi?<|eot|>\n<|im|>assistant\n");
}

TEST(ChatPrompt, ATemplateThatEndsTurnsWithANewlineOnlyStopsAtTheEndOfText) {
  TempDir dir;
  const auto tokenizer =
      make_tokenizer(write_chat_tokenizer(
                         dir.path(),
                         "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
                         "{% if add_generation_prompt %}assistant: {% endif %}")
                         .string());
  const ChatPrompt prompt = chat_prompt(*tokenizer, "", "Hi?");
  EXPECT_EQ(prompt.text, "user: Hi?\nassistant: ");
  EXPECT_EQ(prompt.turn_ends, std::vector<TokenId>{kEos});
}

TEST(ChatPrompt, AFolderWithoutAChatTemplateIsAnErrorNamingIt) {
  TempDir dir;
  const auto tokenizer = make_tokenizer(write_chat_tokenizer(dir.path(), "").string());
  try {
    chat_prompt(*tokenizer, "", "Hi?");
    FAIL() << "no error";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("generate --chat: the tokenizer"), std::string::npos) << message;
    EXPECT_NE(message.find(dir.path().string()), std::string::npos) << message;
    EXPECT_NE(message.find("has no chat template"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace autotrain::data::chat_prompt_test
