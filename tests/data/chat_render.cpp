// Renders the chat-template cases of tests/data/hf_reference/chat_cases.json with autotrain's
// ChatTemplate, for e2e.hf_chat_templates, which renders the same expanded cases with Hugging
// Face's @huggingface/jinja (chat_reference.mjs) and, where installed, Python's jinja2 as
// transformers configures it, and requires the same text from each.
//
// Usage: chat_render <chat_cases.json> <node_modules dir> <expanded.json> <rendered.json>
//
// chat_cases.json holds "templates" (name -> {"tokenizer_config": path under the node_modules
// dir} | {"builtin": "chatml"} | {"source": "..." or "source_lines": [...], "bos_token": ...,
// "eos_token": ...}, each
// optionally with "reference": "jinja2"), "conversations" (name -> messages) and "cases" (groups
// of "templates" x "conversations" x "add_generation_prompt" (default [false, true]), with an
// optional "extra" and "label").
// expanded.json: one object per case: name, template (the source), bos_token and eos_token (absent
//   when the tokenizer has none), messages, add_generation_prompt, extra, and reference ("all",
//   or "jinja2" where @huggingface/jinja is known to differ from Python).
// rendered.json: one object per case: name, and text or error.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "autotrain/core/error.hpp"
#include "autotrain/data/chat_template.hpp"

namespace {

using Json = nlohmann::ordered_json;
using autotrain::data::ChatContext;
using autotrain::data::ChatTemplate;

Json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw autotrain::Error("cannot read " + path);
  return Json::parse(in);
}

// A tokenizer_config.json special token: a string, an AddedToken object, or null.
Json token(const Json& config, const char* key) {
  if (!config.contains(key) || config[key].is_null()) return nullptr;
  const Json& value = config[key];
  return value.is_object() ? value.at("content") : value;
}

// {"template": source, "bos_token": ..., "eos_token": ..., "reference": ...} of one template.
Json resolve(const Json& spec, const std::string& modules) {
  Json out = {{"template", ""}, {"bos_token", nullptr}, {"eos_token", nullptr}};
  if (spec.contains("tokenizer_config")) {
    const Json config = read_json(modules + "/" + spec["tokenizer_config"].get<std::string>());
    out["template"] = config.at("chat_template");
    out["bos_token"] = token(config, "bos_token");
    out["eos_token"] = token(config, "eos_token");
  } else if (spec.contains("builtin")) {
    const std::string name = spec["builtin"];
    const ChatContext context = ChatTemplate::builtin_context(name);
    out["template"] = ChatTemplate::builtin(name).source();
    out["bos_token"] = *context.bos_token;
    out["eos_token"] = *context.eos_token;
  } else if (spec.contains("source_lines")) {
    std::string source;
    for (const std::string line : spec["source_lines"])
      source += (source.empty() ? "" : "\n") + line;
    out["template"] = source;
    out["bos_token"] = spec.value("bos_token", Json(nullptr));
    out["eos_token"] = spec.value("eos_token", Json(nullptr));
  } else {
    out["template"] = spec.at("source");
    out["bos_token"] = spec.value("bos_token", Json(nullptr));
    out["eos_token"] = spec.value("eos_token", Json(nullptr));
  }
  out["reference"] = spec.value("reference", "all");
  return out;
}

Json expand(const Json& cases, const std::string& modules) {
  Json templates = Json::object();
  for (const auto& [name, spec] : cases.at("templates").items())
    templates[name] = resolve(spec, modules);
  Json expanded = Json::array();
  for (const Json& group : cases.at("cases")) {
    const Json generation = group.value("add_generation_prompt", Json::array({false, true}));
    for (const std::string t : group.at("templates")) {
      for (const std::string c : group.at("conversations")) {
        for (const bool g : generation) {
          const Json& resolved = templates.at(t);
          Json one = {
              {"name",
               t + "/" + c + (g ? "/generation" : "") +
                   (group.contains("label") ? "/" + group["label"].get<std::string>() : "")},
              {"template", resolved["template"]},
              {"messages", cases.at("conversations").at(c)},
              {"add_generation_prompt", g},
              {"extra", group.value("extra", Json::object())},
              {"reference", resolved["reference"]}};
          if (!resolved["bos_token"].is_null()) one["bos_token"] = resolved["bos_token"];
          if (!resolved["eos_token"].is_null()) one["eos_token"] = resolved["eos_token"];
          expanded.push_back(std::move(one));
        }
      }
    }
  }
  return expanded;
}

Json render(const Json& one) {
  Json out = {{"name", one["name"]}};
  try {
    const ChatTemplate chat = ChatTemplate::parse(one["template"], "chat_template");
    ChatContext context;
    if (one.contains("bos_token")) context.bos_token = one["bos_token"];
    if (one.contains("eos_token")) context.eos_token = one["eos_token"];
    context.add_generation_prompt = one["add_generation_prompt"];
    context.extra = one["extra"];
    out["text"] = chat.render(one["messages"], context);
  } catch (const autotrain::Error& e) {
    out["error"] = e.what();
  }
  return out;
}

// One element per line keeps the files diffable.
void write_lines(const std::string& path, const Json& items) {
  std::ofstream out(path);
  out << "[\n";
  for (size_t i = 0; i < items.size(); ++i)
    out << items[i].dump() << (i + 1 < items.size() ? ",\n" : "\n");
  out << "]\n";
  if (!out) throw autotrain::Error("cannot write " + path);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::cerr << "usage: chat_render <chat_cases.json> <node_modules dir> <expanded.json> "
                 "<rendered.json>\n";
    return 2;
  }
  try {
    const Json expanded = expand(read_json(argv[1]), argv[2]);
    write_lines(argv[3], expanded);
    Json rendered = Json::array();
    for (const Json& one : expanded) rendered.push_back(render(one));
    write_lines(argv[4], rendered);
  } catch (const std::exception& e) {
    std::cerr << "chat_render: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
