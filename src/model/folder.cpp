#include "autotrain/model/folder.hpp"

#include <fstream>

#include "autotrain/core/error.hpp"
#include "autotrain/core/strings.hpp"
#include "autotrain/model/family.hpp"

namespace autotrain::model {

namespace fs = std::filesystem;

nlohmann::json read_config_json(const fs::path& folder) {
  const fs::path file = folder / "config.json";
  std::ifstream in(file);
  AT_CHECK(in.good(), "cannot read ", file.string(), " (expected a model folder's config.json)");
  nlohmann::json config;
  try {
    config = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw Error(cat(file.string(), ": not valid JSON: ", e.what()));
  }
  AT_CHECK(config.is_object(), file.string(), ": expected a JSON object, got ", config.type_name());
  return config;
}

ModelConfig read_folder_config(const fs::path& folder) {
  return read_hf_config(read_config_json(folder), (folder / "config.json").string());
}

config::FolderShape folder_shape(const fs::path& folder) {
  const ModelConfig model = read_folder_config(folder);
  config::FolderShape shape;
  shape.n_layer = model.n_layer;
  shape.n_head = model.n_head;
  shape.n_embd = model.n_embd;
  shape.n_positions = model.block_size;
  shape.vocab_size = model.vocab_size;
  shape.head_dim = int64_t{model.head_size()} * model.n_head != model.n_embd;
  return shape;
}

}  // namespace autotrain::model
