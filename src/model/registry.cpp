// The families autotrain runs, found by config.json's model_type (a folder's) or by a model's
// architecture (a checkpoint's): the one place a family is added.
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

}  // namespace

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
      if (a.model_type == model_type) return family().from_hf_config(json, file);
    }
  }
  const auto architectures = json.find("architectures");
  throw Error(cat(file, ": architectures ",
                  architectures == json.end() ? "missing" : architectures->dump(), ", model_type ",
                  type == json.end() ? "missing" : type->dump(),
                  ": not supported (expected model_type ", supported(), ")"));
}

}  // namespace autotrain::model
