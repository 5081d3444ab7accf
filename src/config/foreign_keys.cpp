#include "foreign_keys.hpp"

#include <algorithm>
#include <cctype>
#include <vector>

#include "autotrain/config/training_params.hpp"

namespace autotrain::config {
namespace {

constexpr ForeignKey kForeignKeys[] = {
    {"model_max_length", true,
     "the context length is n_positions (the base model's); block_size -1 also respects the "
     "folder's tokenizer_config.json model_max_length"},
    {"padding", true, "sequences are packed to block_size, never padded"},
    {"push_to_hub", true, "the model is exported to <project_name>/, never pushed"},
    {"username", true, "nothing is pushed to the Hugging Face Hub"},
    {"token", true, "Hub tokens are neither used nor stored"},
    {"backend", true, "autotrain runs where mpirun or srun starts it"},
    {"unsloth", true,
     "Unsloth patches a Python model; autotrain's own CPU and CUDA kernels run either way"},
    {"use_flash_attention_2", true,
     "attention on GPUs runs autotrain's own flash kernels where they apply (docs/gpu.md)"},
    {"zero3_init_flag", true,
     "the parameters are always created and read sharded, a unit at a time (what "
     "deepspeed.zero.Init does)"},
    {"deepspeed_multinode_launcher", false,
     "autotrain's ranks start under srun or mpirun (autotrain launch), not pdsh, openmpi or "
     "mvapich through DeepSpeed; set deepspeed_multinode_launcher: standard",
     "standard"},
    {"base_model_path", true, "written by autotrain train: the folder the base weights came from"},
    {"base_model_weights", true, "written by autotrain train: the hash of the base weights"},
};

}  // namespace

bool ForeignKey::harmless_with(std::string value) const {
  std::transform(value.begin(), value.end(), value.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const bool off =
      value.empty() || value == "false" || value == "null" || value == "none" || value == "~";
  return ignored || off || (!harmless.empty() && value == harmless);
}

const ForeignKey* find_foreign_key(std::string_view name) {
  for (const auto& key : kForeignKeys) {
    if (key.name == name) return &key;
  }
  return nullptr;
}

std::vector<std::string_view> foreign_key_names() {
  std::vector<std::string_view> names;
  for (const auto& key : kForeignKeys) names.push_back(key.name);
  return names;
}

}  // namespace autotrain::config
