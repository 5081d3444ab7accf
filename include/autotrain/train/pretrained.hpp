#pragma once
// A Hugging Face model folder's pretrained weights as a model::ParamSource: model.safetensors,
// or the shards named by model.safetensors.index.json; F32, BF16 or F16 converted to fp32.
//
// Opening reads the headers only and matches every tensor of the layout by its Hugging Face name
// (GPT-2's with or without the "transformer." prefix; the family says what else a file may hold
// that is not trained); missing, unexpected and mis-shaped
// tensors are listed by name in one Error. fill() copies only the requested range through a
// read-only memory map, so a ZeRO-3 rank reads its shard of each tensor and nothing else.
// A reward model (ModelConfig::score_head) started from a causal LM's folder takes everything but
// its lm_head.weight, and draws the score head the folder lacks as transformers does: normal(0,
// config.json's initializer_range, 0.02 when absent), from `seed`. A sequence classifier's folder
// must hold its score.weight.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "autotrain/ckpt/safetensors.hpp"
#include "autotrain/model/param_layout.hpp"
#include "autotrain/model/param_source.hpp"
#include "autotrain/train/run_setup.hpp"

namespace autotrain::train {

class PretrainedWeights final : public model::ParamSource {
 public:
  PretrainedWeights(std::filesystem::path folder, const model::ParamLayout& layout,
                    std::uint64_t seed = 0);

  void fill(const model::ParamLayout& layout, std::span<float> out,
            std::size_t begin) const override;
  std::string describe() const override;

  const std::filesystem::path& folder() const { return folder_; }
  // The weight files, in the order of the index (one for an unsharded folder).
  std::vector<std::filesystem::path> files() const;

 private:
  struct Match {
    int file = -1;  // into files_; -1: a new score head, drawn from seed_
    const ckpt::SafetensorsEntry* entry = nullptr;
  };

  // Whether the layout's tensor `tensor`, which the files lack, is a score head to draw (the
  // folder is a causal LM's); sets new_head_.
  bool draws_new_head(const model::ParamTensor& tensor);

  std::filesystem::path folder_;
  std::uint64_t seed_;
  std::optional<model::InitRule> new_head_;  // the rule of a score head the folder lacks
  std::vector<ckpt::SafetensorsFile> files_;
  std::vector<Match> matches_;  // one per layout tensor
};

// Identifies the weights a run starts from: "sum-fmix64:<16 hex digits>" of the index file (of a
// sharded set), each file's name and size, and every byte of the files (ckpt::files_digest: the
// ranks of `comm` read a part each, and the result does not depend on how many there are).
// Collective over `comm`; a file that cannot be read fails every rank.
inline constexpr const char* kWeightsHashPrefix = "sum-fmix64:";
std::string weights_hash(const std::filesystem::path& folder, MPI_Comm comm);

// weights_hash of the base model's folder; "" from scratch or when the weights are missing.
std::string base_weights_hash(const config::BaseModel& base, MPI_Comm comm);

// What checkpoints of versions before sum-fmix64 recorded: "fnv1a64:<16 hex digits>" of the
// index, each file's size and only its first and last MiB (a change in between goes unseen).
inline constexpr const char* kSampledHashPrefix = "fnv1a64:";
std::string sampled_weights_hash(const std::filesystem::path& folder);

// The base model's weights: RandomInit(seed) with from_scratch, else the base model folder's,
// matched against `layout` (the model's) on every rank. Collective: a base model that is missing
// or does not fit fails every rank with the first rank's message.
std::unique_ptr<model::ParamSource> open_base_weights(const RunSetup& setup,
                                                      const model::ParamLayout& layout);

// dpo's model_ref (a folder or Hub id, at the run's revision): its weights matched against
// `layout`, the policy's, on every rank. Collective, as open_base_weights; the message names
// model_ref.
std::unique_ptr<model::ParamSource> open_reference_weights(const RunSetup& setup,
                                                           const model::ParamLayout& layout);

// Where the trained layout's first values come from: with peft the adapters' initialisation
// from the seed (the base weights are the LoRA model's, train/lora.hpp), else open_base_weights.
std::unique_ptr<model::ParamSource> open_param_source(const RunSetup& setup,
                                                      const model::ParamLayout& layout);

}  // namespace autotrain::train
