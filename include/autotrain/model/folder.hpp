#pragma once
// A Hugging Face model folder's config.json, read in one place: by the family registry
// (family.hpp's read_hf_config). The config layer sees it through folder_shape, which it is
// handed (config::FolderShapeReader), since it sits below this layer.
#include <filesystem>
#include <nlohmann/json.hpp>

#include "autotrain/config/base_model.hpp"
#include "autotrain/model/config.hpp"

namespace autotrain::model {

// folder/config.json parsed; an Error naming the file when it is missing, not JSON, or not an
// object.
nlohmann::json read_config_json(const std::filesystem::path& folder);

// The model folder/config.json describes (read_hf_config).
ModelConfig read_folder_config(const std::filesystem::path& folder);

// Its shape, as parameters resolve it (config::resolve_params).
config::FolderShape folder_shape(const std::filesystem::path& folder);

}  // namespace autotrain::model
