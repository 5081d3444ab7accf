// The families autotrain runs, found by config.json's model_type (a folder's) or by a model's
// architecture (a checkpoint's): the one place a family is added.
#include <algorithm>
#include <string>

#include "autotrain/core/error.hpp"
#include "autotrain/core/strings.hpp"
#include "autotrain/model/family.hpp"

namespace autotrain::model {

const ModelFamily& gpt2_family();   // gpt2_family.cpp
const ModelFamily& llama_family();  // llama_family.cpp
const ModelFamily& phi3_family();   // phi3_family.cpp
const ModelFamily& gemma_family();  // gemma_family.cpp

namespace {

using FamilyGetter = const ModelFamily& (*)();
constexpr FamilyGetter kFamilies[] = {gpt2_family, llama_family, phi3_family, gemma_family};

// "gpt2: GPT2LMHeadModel; llama: LlamaForCausalLM; ...", for errors.
std::string supported() {
  std::string text;
  for (const FamilyGetter family : kFamilies) {
    for (const HfArchitecture& a : family().architectures()) {
      text += cat(text.empty() ? "" : "; ", a.model_type, ": ", a.architecture);
    }
  }
  return text;
}

// Whether config.json's architectures lists `name`.
bool lists(const nlohmann::json& json, std::string_view name) {
  const auto architectures = json.find("architectures");
  if (architectures == json.end() || !architectures->is_array()) return false;
  return std::any_of(architectures->begin(), architectures->end(),
                     [&](const nlohmann::json& entry) { return entry == name; });
}

// transformers' num_labels: id2label's entries, else num_labels, else its default of 2.
void check_one_label(const nlohmann::json& json, const std::string& file) {
  const auto id2label = json.find("id2label");
  const auto num_labels = json.find("num_labels");
  long long labels = 2;
  if (id2label != json.end() && id2label->is_object()) {
    labels = static_cast<long long>(id2label->size());
  } else if (num_labels != json.end() && num_labels->is_number_integer()) {
    labels = num_labels->get<long long>();
  }
  AT_CHECK(labels == 1, file, ": a sequence classifier with ", labels,
           " labels; autotrain's score head (a reward model) has one output (expected id2label "
           "of one entry, or num_labels 1)");
}

}  // namespace

nlohmann::ordered_json hf_config(const ModelConfig& config) {
  nlohmann::ordered_json json = family_of(config).hf_config(config);
  if (!config.score_head) return json;
  json["architectures"] = {classifier_architecture(config)};
  json["id2label"] = {{"0", "LABEL_0"}};
  json["label2id"] = {{"LABEL_0", 0}};
  return json;
}

std::string_view classifier_architecture(const ModelConfig& config) {
  for (const HfArchitecture& a : family_of(config).architectures()) {
    if (a.architecture == config.architecture) return a.classifier;
  }
  throw Error(cat("internal: no classifier for architecture ", config.architecture));
}

const ModelFamily& family_of(const ModelConfig& config) {
  for (const FamilyGetter family : kFamilies) {
    for (const HfArchitecture& a : family().architectures()) {
      if (a.architecture == config.architecture) return family();
    }
  }
  throw Error(cat("model config: architecture ", config.architecture,
                  " is not supported (expected one of ", supported(), ")"));
}

ModelConfig read_hf_config(const nlohmann::json& json, const std::string& file) {
  AT_CHECK(json.is_object(), file, ": expected a JSON object, got ", json.type_name());
  const auto type = json.find("model_type");
  const std::string model_type =
      type != json.end() && type->is_string() ? type->get<std::string>() : std::string();
  for (const FamilyGetter family : kFamilies) {
    for (const HfArchitecture& a : family().architectures()) {
      if (a.model_type != model_type) continue;
      if (!lists(json, a.classifier)) return family().from_hf_config(json, file);
      // The classifier: the causal model's keys, with the score head instead of the LM head.
      check_one_label(json, file);
      nlohmann::json causal = json;
      causal["architectures"] = {a.architecture};
      ModelConfig config = family().from_hf_config(causal, file);
      config.score_head = true;
      return config;
    }
  }
  const auto architectures = json.find("architectures");
  throw Error(cat(file, ": architectures ",
                  architectures == json.end() ? "missing" : architectures->dump(), ", model_type ",
                  type == json.end() ? "missing" : type->dump(),
                  ": not supported (expected model_type ", supported(), ")"));
}

}  // namespace autotrain::model
