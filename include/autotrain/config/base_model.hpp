#pragma once
// Where a run's base model comes from (docs/model.md, "Base models"): `model` (YAML base_model)
// names a model folder, a Hugging Face Hub id found offline in the Hub cache, or an
// architecture preset. Without from_scratch the run starts from the folder's pretrained weights;
// with it, from random weights in the folder's (or the preset's) architecture. autotrain never
// downloads: a Hub id missing from the cache is an error that says how to fetch it.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace autotrain::config {

// The shape config.json declares, as the model layer reads it (model::folder_shape, whatever
// the family: GPT-2's n_layer, the Llama family's num_hidden_layers, ...). A model_type no
// family has is an Error naming `architectures` and `model_type`.
struct FolderShape {
  int64_t n_layer = 0;
  int64_t n_head = 0;
  int64_t n_embd = 0;
  int64_t n_positions = 0;
  int64_t vocab_size = 0;
  bool head_dim = false;  // config.json sets its own head_dim (hidden / heads need not divide)
};
// Reads a folder's FolderShape. The model layer's registry knows the families, and it sits above
// this layer: whoever resolves parameters hands its reader in (model::folder_shape).
using FolderShapeReader = std::function<FolderShape(const std::filesystem::path& folder)>;

// adapter_config.json's base_model_name_or_path for a base given as `model` and found in
// `folder`: the Hub id as given when `model` is not a folder (it came from the Hub cache, and a
// cache path would tie the adapters to this machine), else the folder; "" when neither is known.
std::string peft_base_name(std::string_view model, const std::filesystem::path& folder);

struct BaseModel {
  std::string name;              // `model` as given
  std::string revision;          // for a Hub id
  bool from_scratch = false;     // random weights in the model's architecture
  std::filesystem::path folder;  // config.json and the weights; empty when none was found
  std::vector<std::filesystem::path> searched;  // cache folders a Hub id was looked for in
  // data/models/<id>/ when the weights are not found but autotrain knows the architecture
  // (a config.json without weights: the dry run plans it, from_scratch trains it).
  std::filesystem::path known_architecture;
  // The folder (or known architecture) whose config.json describes the model; empty for a
  // preset. The model layer reads all of it (model::read_folder_config); this layer its shape.
  std::optional<FolderShape> shape;  // of config_dir(), filled by resolve_params
  std::filesystem::path config_dir() const { return folder.empty() ? known_architecture : folder; }

  bool pretrained() const { return !from_scratch; }
  // Pretrained weights were asked for, and there is no folder holding them.
  bool weights_missing() const { return pretrained() && folder.empty(); }
  // "weights from PATH" or "random initialisation (seed S)".
  std::string describe(int64_t seed) const;
  // What a PEFT adapter folder names as its base (base_model_name_or_path): peft_base_name.
  std::string peft_base_name() const { return config::peft_base_name(name, folder); }
  // Why the weights are missing and how to get them (login-node command, from_scratch).
  std::string missing_message() const;
};

// The Hub cache folders, in transformers' order: $HF_HUB_CACHE, $HF_HOME/hub,
// ~/.cache/huggingface/hub (those whose variable is set).
std::vector<std::filesystem::path> hub_cache_dirs();

enum class HubRepo { model, dataset };
// The snapshot folder of a Hub id in one cache: models--org--name/refs/<revision> (datasets--...
// for a dataset) names the snapshot (a 40-digit revision names it directly); a model's holds
// config.json. nullopt when absent.
std::optional<std::filesystem::path> find_in_hub_cache(const std::filesystem::path& cache,
                                                       std::string_view repo_id,
                                                       std::string_view revision,
                                                       HubRepo kind = HubRepo::model);

// data_path as the data layer reads it: the path when it exists (or is not an org/name id);
// else the snapshot of dataset org/name in the Hub cache (as `huggingface-cli download
// --repo-type dataset org/name` leaves it), or an Error that lists the caches searched and says
// what to run on a login node.
std::filesystem::path locate_dataset(std::string_view data_path);

// Finds `model`: an existing folder (it must hold config.json), else a Hub id in the caches
// (GPT-2's legacy bare names also as openai-community/<name>), else nothing (folder empty; the
// known architecture of that name, if there is one).
// Throws Error for a path that exists but is not a model folder.
BaseModel locate_base_model(std::string_view model, std::string_view revision, bool from_scratch);

// tokenizer_config.json's model_max_length in `folder`, when it is a real bound (transformers
// writes 1e30 when the tokenizer sets none).
std::optional<int64_t> tokenizer_max_length(const std::filesystem::path& folder);

}  // namespace autotrain::config
