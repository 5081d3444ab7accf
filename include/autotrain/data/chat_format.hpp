#pragma once
// Conversations into training text (chat_template, docs/data.md "Conversations"): a chat
// template renders the messages as the model's prompt format; with completions_only the text is
// cut into segments that carry loss (each assistant turn's content and the end-of-turn token
// right after it) and segments that do not (everything else).
//
// The assistant turns are found by rendering the conversation a second time with each
// assistant content wrapped in two private-use characters (U+E000 … U+E001): where the
// template copies the content, the markers come along. Templates that change the content (trim,
// strip) are handled by finding the trimmed content again in the plain rendering; a template
// that drops or splits the content (Qwen3 moving a <think> block) leaves markers unpaired, and
// completion-only loss is then an Error naming the conversation.
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "autotrain/data/tokenizer.hpp"

namespace autotrain::data {

class ChatTemplate;

struct ChatSegment {
  std::string text;
  bool carries_loss = true;
};

class ChatFormatter {
 public:
  // chat_template: "tokenizer" (the tokenizer folder's own template), "chatml" or "zephyr"
  // (AutoTrain's built-in formats). An Error when the tokenizer has no template, or it does not
  // parse.
  ChatFormatter(std::string_view chat_template, const Tokenizer& tokenizer);
  ~ChatFormatter();
  ChatFormatter(ChatFormatter&&) noexcept;
  ChatFormatter& operator=(ChatFormatter&&) noexcept;

  // The rendered conversation (add_generation_prompt false): one segment carrying loss, or with
  // completions_only the segments in order. `where` names the conversation in errors.
  std::vector<ChatSegment> render(const nlohmann::ordered_json& messages, bool completions_only,
                                  const std::string& where) const;
  // The template's text and where it came from ("chatml", or the tokenizer_config.json), for
  // the prepared data's manifest.
  const std::string& source() const { return source_; }
  const std::string& origin() const { return origin_; }

 private:
  std::unique_ptr<ChatTemplate> template_;
  std::string source_;
  std::string origin_;
  std::string bos_token_, eos_token_;
  std::vector<std::string> turn_ends_;  // spellings that close an assistant turn
};

}  // namespace autotrain::data
