#pragma once
// Hugging Face chat templates: the Jinja `chat_template` of a model's tokenizer_config.json,
// rendered as transformers' apply_chat_template renders it (Python jinja2 with trim_blocks and
// lstrip_blocks, loopcontrols, and transformers' tojson, raise_exception and strftime_now).
// One small interpreter of the Jinja subset the templates of our families use
// (src/data/jinja/); anything outside it is an Error naming the template's origin, line and
// construct, never a different rendering.
//
// Messages and extra variables are ordered JSON: `tools | tojson` writes the keys of a tool's
// schema in the order the user gave them, as Python's dicts keep them.
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace autotrain::data {

namespace jinja {
struct Program;
}

// The variables apply_chat_template passes to the template.
struct ChatContext {
  // A token the tokenizer does not have (nullopt) is undefined in the template, as in
  // transformers, where only the special tokens that are set reach it.
  std::optional<std::string> bos_token;
  std::optional<std::string> eos_token;
  bool add_generation_prompt = false;
  // Other keyword arguments of apply_chat_template (tools, documents, enable_thinking, ...).
  // `tools` and `documents` are none unless given here, as in transformers.
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
};

class ChatTemplate {
 public:
  // Parses `source`; every error, now or in render(), starts with `origin` and the line, e.g.
  // "models/tokenizer_config.json chat_template line 3: the \"macro\" tag is not supported ...".
  static ChatTemplate parse(std::string source, std::string origin);
  // AutoTrain Advanced's built-in formats by name: "chatml", "zephyr". An Error for any other.
  static ChatTemplate builtin(std::string_view name);
  static std::vector<std::string> builtin_names();
  // The special tokens AutoTrain gives the tokenizer with a built-in format (bos "<s>"; eos
  // "<|im_end|>" for chatml, "</s>" for zephyr); add_generation_prompt false.
  static ChatContext builtin_context(std::string_view name);

  // `messages`: a JSON array of {"role": ..., "content": ...} objects (other fields allowed).
  // Const and safe to call from many threads at once.
  std::string render(const nlohmann::ordered_json& messages, const ChatContext& context) const;

  const std::string& source() const { return source_; }
  const std::string& origin() const { return origin_; }

 private:
  ChatTemplate(std::string source, std::string origin, std::shared_ptr<const jinja::Program> ast);

  std::string source_;
  std::string origin_;
  std::shared_ptr<const jinja::Program> program_;
};

}  // namespace autotrain::data
