#pragma once
// A prompt for a chat model (`autotrain generate --chat`): the user's text (and a system text)
// rendered by the tokenizer folder's chat template as transformers' apply_chat_template renders
// it with add_generation_prompt=True, and the tokens that end the assistant's turn.
#include <string>
#include <string_view>
#include <vector>

#include "autotrain/data/tokenizer.hpp"

namespace autotrain::data {

struct ChatPrompt {
  std::string text;  // up to the assistant's header: the reply follows it
  // What ends the reply: the tokenizer's stop tokens (tokenizer_config.json's eos_token,
  // generation_config.json's eos_token_id, one id or a list) and the template's own end-of-turn
  // token (<|im_end|>, <|eot_id|>, <end_of_turn>, <|end|>, ...): the special token the template
  // writes right after an assistant message's content.
  std::vector<TokenId> turn_ends;
};

// `system` empty: no system message. An Error naming the folder when its tokenizer has no chat
// template (no chat_template in tokenizer_config.json, no chat_template.jinja), or the template
// fails.
ChatPrompt chat_prompt(const Tokenizer& tokenizer, std::string_view system, std::string_view user);

}  // namespace autotrain::data
