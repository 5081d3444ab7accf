#include "autotrain/data/chat_prompt.hpp"

#include <algorithm>
#include <optional>

#include "autotrain/core/error.hpp"
#include "autotrain/core/strings.hpp"
#include "autotrain/data/chat_template.hpp"

namespace autotrain::data {
namespace {

// U+E001 (private use): an assistant content no template rewrites, found again after rendering.
constexpr std::string_view kReply = "\xEE\x80\x81";

ChatContext context_of(const ChatSettings& settings, bool add_generation_prompt) {
  ChatContext context;
  if (!settings.bos_token.empty()) context.bos_token = settings.bos_token;
  if (!settings.eos_token.empty()) context.eos_token = settings.eos_token;
  context.add_generation_prompt = add_generation_prompt;
  return context;
}

// The token the template writes right after an assistant's content, when it is a special token
// (one token spelled by several characters: "<|im_end|>", not the "\n" some templates write
// instead); nullopt when the template writes none or cannot render a finished exchange.
std::optional<TokenId> template_turn_end(const Tokenizer& tokenizer, const ChatTemplate& chat,
                                         const ChatContext& context) {
  const nlohmann::ordered_json exchange = {{{"role", "user"}, {"content", "hello"}},
                                           {{"role", "assistant"}, {"content", kReply}}};
  std::string rendered;
  try {
    rendered = chat.render(exchange, context);
  } catch (const Error&) {
    return std::nullopt;  // the prompt's own rendering reports what is wrong with the template
  }
  const size_t at = rendered.rfind(kReply);
  if (at == std::string::npos) return std::nullopt;
  const std::string_view after = std::string_view(rendered).substr(at + kReply.size());
  std::vector<TokenId> ids;
  tokenizer.encode_append(after, ids, TextPosition::continuation);
  if (ids.empty()) return std::nullopt;
  const std::string spelling = tokenizer.decode(std::vector<TokenId>{ids.front()});
  if (spelling.size() < 3 || !after.starts_with(spelling)) return std::nullopt;
  return ids.front();
}

}  // namespace

ChatPrompt chat_prompt(const Tokenizer& tokenizer, std::string_view system, std::string_view user) {
  const ChatSettings settings = tokenizer.chat_settings();
  AT_CHECK(!settings.chat_template.empty(), "generate --chat: the tokenizer ", tokenizer.name(),
           " has no chat template (no chat_template in its tokenizer_config.json, no "
           "chat_template.jinja beside it); give the prompt as plain text without --chat, or a "
           "model folder whose tokenizer has one");
  const ChatTemplate chat = ChatTemplate::parse(settings.chat_template, settings.origin);
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  if (!system.empty()) messages.push_back({{"role", "system"}, {"content", system}});
  messages.push_back({{"role", "user"}, {"content", user}});
  ChatPrompt prompt;
  prompt.text = chat.render(messages, context_of(settings, true));
  prompt.turn_ends = tokenizer.stop_tokens();
  const auto turn_end = template_turn_end(tokenizer, chat, context_of(settings, false));
  if (turn_end && std::find(prompt.turn_ends.begin(), prompt.turn_ends.end(), *turn_end) ==
                      prompt.turn_ends.end())
    prompt.turn_ends.push_back(*turn_end);
  return prompt;
}

}  // namespace autotrain::data
