#include "autotrain/data/chat_template.hpp"

#include <array>

#include "autotrain/core/error.hpp"
#include "autotrain/core/strings.hpp"
#include "jinja/ast.hpp"
#include "jinja/evaluator.hpp"
#include "jinja/json.hpp"
#include "jinja/lexer.hpp"
#include "jinja/parser.hpp"

namespace autotrain::data {
namespace {

// AutoTrain Advanced's formats, verbatim: CHATML_CHAT_TEMPLATE and ZEPHYR_CHAT_TEMPLATE in
// src/autotrain/trainers/clm/utils.py (huggingface/autotrain-advanced), which get_tokenizer sets
// as tokenizer.chat_template for `chat_template: chatml` / `zephyr`, with the special tokens of
// ChatmlSpecialTokens / ZephyrSpecialTokens (bos "<s>"; eos "<|im_end|>" / "</s>").
struct BuiltinFormat {
  const char* name;
  const char* source;
  const char* bos_token;
  const char* eos_token;
};

constexpr std::array<BuiltinFormat, 2> kBuiltinFormats = {{
    {"chatml",
     "{% for message in messages %}\n{{'<|im_start|>' + message['role'] + '\n' + "
     "message['content'] + '<|im_end|>' + '\n'}}{% if loop.last and add_generation_prompt "
     "%}{{'<|im_start|>assistant\n' }}{% endif %}{% endfor %}",
     "<s>", "<|im_end|>"},
    {"zephyr",
     "{% for message in messages %}\n{% if message['role'] == 'user' %}\n{{ '<|user|>\n' + "
     "message['content'] + eos_token }}\n{% elif message['role'] == 'system' %}\n{{ "
     "'<|system|>\n' + message['content'] + eos_token }}\n{% elif message['role'] == "
     "'assistant' %}\n{{ '<|assistant|>\n'  + message['content'] + eos_token }}\n{% endif "
     "%}\n{% if loop.last and add_generation_prompt %}\n{{ '<|assistant|>' }}\n{% endif %}\n{% "
     "endfor %}",
     "<s>", "</s>"},
}};

const BuiltinFormat& builtin_format(std::string_view name) {
  for (const BuiltinFormat& format : kBuiltinFormats)
    if (name == format.name) return format;
  const std::vector<std::string> names = ChatTemplate::builtin_names();
  throw Error(cat("unknown chat template \"", name, "\"", did_you_mean(name, names),
                  "; built-in formats: ", join(names, ", ")));
}

}  // namespace

ChatTemplate::ChatTemplate(std::string source, std::string origin,
                           std::shared_ptr<const jinja::Program> program)
    : source_(std::move(source)), origin_(std::move(origin)), program_(std::move(program)) {}

ChatTemplate ChatTemplate::parse(std::string source, std::string origin) {
  const std::vector<jinja::Token> tokens = jinja::lex(source, origin);
  auto program = std::make_shared<const jinja::Program>(jinja::parse_program(tokens, origin));
  return ChatTemplate(std::move(source), std::move(origin), std::move(program));
}

ChatTemplate ChatTemplate::builtin(std::string_view name) {
  const BuiltinFormat& format = builtin_format(name);
  return parse(format.source, cat("the built-in chat template \"", format.name, "\""));
}

std::vector<std::string> ChatTemplate::builtin_names() {
  std::vector<std::string> names;
  for (const BuiltinFormat& format : kBuiltinFormats) names.emplace_back(format.name);
  return names;
}

ChatContext ChatTemplate::builtin_context(std::string_view name) {
  const BuiltinFormat& format = builtin_format(name);
  ChatContext context;
  context.bos_token = format.bos_token;
  context.eos_token = format.eos_token;
  return context;
}

std::string ChatTemplate::render(const nlohmann::ordered_json& messages,
                                 const ChatContext& context) const {
  AT_CHECK(messages.is_array(), origin_, ": the messages must be a JSON array, got ",
           messages.type_name());
  AT_CHECK(context.extra.is_object(), origin_, ": the extra template variables must be a JSON ",
           "object, got ", context.extra.type_name());
  // What transformers' apply_chat_template passes: the tokenizer's special tokens that are set,
  // then messages, tools, documents, add_generation_prompt and the other keyword arguments.
  jinja::Dict variables;
  try {
    if (context.bos_token) variables.set("bos_token", jinja::Value::string(*context.bos_token));
    if (context.eos_token) variables.set("eos_token", jinja::Value::string(*context.eos_token));
    variables.set("messages", jinja::from_json(messages));
    variables.set("tools", jinja::Value::none());
    variables.set("documents", jinja::Value::none());
    variables.set("add_generation_prompt", jinja::Value::boolean(context.add_generation_prompt));
    for (const auto& [key, value] : context.extra.items())
      variables.set(key, jinja::from_json(value));
  } catch (const jinja::Failure& failure) {
    throw Error(cat(origin_, ": the template's variables: ", failure.what()));
  }
  // The render's budget grows with what it is given (replace: invalid UTF-8 is counted, not
  // refused; the template sees it as it is).
  const size_t input_bytes =
      messages.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace).size() +
      context.extra.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace).size();
  return jinja::render_program(*program_, variables, origin_,
                               jinja::BudgetLimits::for_input(input_bytes));
}

}  // namespace autotrain::data
