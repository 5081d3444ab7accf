#pragma once
// AutoTrain's `autotrain tools merge-llm-adapter`: a base model folder (or a Hub id in the offline
// Hub cache) and a PEFT adapter folder (adapter_config.json + adapter_model.safetensors, as
// export writes it and as PEFT's save_pretrained does) into one merged Hugging Face folder, as
// merge_adapter: true exports it at the end of training: every adapted weight W becomes
// W + lora_alpha / r · B · A, computed in fp32; everything else is the base's. One process.
#include <cstdint>
#include <filesystem>
#include <string>

namespace autotrain::train {

struct AdapterMerge {
  std::string base_model;         // --base-model-path: a model folder or a Hub id
  std::filesystem::path adapter;  // --adapter-path
  std::filesystem::path output;   // --output-folder
  std::string export_dtype = "fp32";
  std::string max_shard_size = "5GB";
  // AutoTrain's resize_token_embeddings(len(tokenizer), pad_to_multiple_of): 0 = none. Only a
  // vocabulary that is already a multiple is accepted (see merge_adapter_folder).
  int64_t pad_to_multiple_of = 0;
};

// Writes the merged model (model.safetensors or its shards, config.json: the base's with the
// dtype, the tokenizer files: the adapter folder's when it has them, else the base's) into
// merge.output and returns the weight files' summary. Errors name the file and key or tensor:
// an adapter folder without adapter_config.json or adapter_model.safetensors, r or lora_alpha
// missing, target_modules that name no linear layer of the base, an adapter shaped for another
// base, a tokenizer with more tokens than the base's embeddings, a pad_to_multiple_of that would
// add embedding rows.
std::string merge_adapter_folder(const AdapterMerge& merge);

}  // namespace autotrain::train
