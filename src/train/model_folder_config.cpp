#include "autotrain/train/model_folder_config.hpp"

#include <nlohmann/json.hpp>

#include "autotrain/core/error.hpp"
#include "autotrain/model/family.hpp"
#include "autotrain/model/folder.hpp"

namespace autotrain::train {

ModelFolderConfig read_model_config(const std::filesystem::path& dir) {
  const auto config_path = dir / "config.json";
  const nlohmann::json config = model::read_config_json(dir);
  const model::ModelConfig shape = model::read_hf_config(config, config_path.string());
  const auto tokenizer = config.find("autotrain_tokenizer");
  AT_CHECK(tokenizer == config.end() || tokenizer->is_string(), config_path.string(),
           ": autotrain_tokenizer should be a string, got ", tokenizer->dump());
  return {shape, tokenizer == config.end() ? "gpt2" : tokenizer->get<std::string>()};
}

}  // namespace autotrain::train
