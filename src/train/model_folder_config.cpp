#include "autotrain/train/model_folder_config.hpp"

#include <fstream>
#include <nlohmann/json.hpp>

#include "autotrain/core/error.hpp"
#include "autotrain/model/family.hpp"

namespace autotrain::train {

ModelFolderConfig read_model_config(const std::filesystem::path& dir) {
  const auto config_path = dir / "config.json";
  std::ifstream in(config_path);
  AT_CHECK(in.good(), "cannot read ", config_path.string(),
           " (expected a model folder written by autotrain export or train)");
  nlohmann::json config;
  try {
    config = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& error) {
    throw Error(cat(config_path.string(), ": not valid JSON: ", error.what()));
  }
  AT_CHECK(config.is_object(), config_path.string(), ": expected a JSON object, got ",
           config.type_name());
  const model::ModelConfig shape = model::read_hf_config(config, config_path.string());
  const auto tokenizer = config.find("autotrain_tokenizer");
  AT_CHECK(tokenizer == config.end() || tokenizer->is_string(), config_path.string(),
           ": autotrain_tokenizer should be a string, got ", tokenizer->dump());
  return {shape, tokenizer == config.end() ? "gpt2" : tokenizer->get<std::string>()};
}

}  // namespace autotrain::train
