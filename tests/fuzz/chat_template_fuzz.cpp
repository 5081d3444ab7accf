// A chat template from the Hub (tokenizer_config.json's chat_template, or chat_template.jinja)
// NUL the conversation it renders (a JSON list of messages; none or invalid JSON: a fixed one).
// The template is untrusted: parse and render must end in success or an Error, within the
// render's budget (src/data/jinja/budget.hpp), never in a hang or std::bad_alloc.
#include <nlohmann/json.hpp>

#include "autotrain/data/chat_template.hpp"
#include "fuzz_support.hpp"

using namespace autotrain;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto parts = fuzz::split_at_nul(fuzz::as_text(data, size), 2);
  nlohmann::ordered_json messages = nlohmann::ordered_json::parse(
      R"([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
          {"role": "assistant", "content": "Hello"}])");
  if (parts.size() > 1) {
    nlohmann::ordered_json given = nlohmann::ordered_json::parse(parts[1], nullptr, false);
    if (given.is_array()) messages = std::move(given);
  }
  fuzz::expect_error_or_success([&] {
    const data::ChatTemplate chat_template =
        data::ChatTemplate::parse(std::string(parts[0]), "fuzz/chat_template.jinja");
    data::ChatContext context;
    context.bos_token = "<s>";
    context.eos_token = "</s>";
    (void)chat_template.render(messages, context);
    context.add_generation_prompt = true;
    context.extra = {{"enable_thinking", false}};
    (void)chat_template.render(messages, context);
  });
  return 0;
}
