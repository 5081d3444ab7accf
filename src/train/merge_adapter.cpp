#include "autotrain/train/merge_adapter.hpp"

#include <optional>
#include <vector>

#include "autotrain/config/base_model.hpp"
#include "autotrain/config/training_params.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/strings.hpp"
#include "autotrain/data/tokenizer.hpp"
#include "autotrain/train/adapter_folder.hpp"
#include "autotrain/train/export.hpp"
#include "autotrain/train/lora.hpp"
#include "autotrain/train/model_folder_config.hpp"
#include "autotrain/train/pretrained.hpp"

namespace autotrain::train {
namespace {

namespace fs = std::filesystem;

void check_adapter_folder(const fs::path& adapter) {
  std::error_code error;
  AT_CHECK(fs::is_directory(adapter, error), "--adapter-path ", adapter.string(),
           ": not a folder (expected a PEFT adapter folder: ", kAdapterConfig, " and ",
           kAdapterWeights, ")");
  AT_CHECK(is_adapter_folder(adapter), "--adapter-path ", adapter.string(), ": no ", kAdapterConfig,
           " (expected a PEFT adapter folder: ", kAdapterConfig, " and ", kAdapterWeights, ")");
  AT_CHECK(fs::is_regular_file(adapter / kAdapterWeights, error), "--adapter-path ",
           adapter.string(), ": no ", kAdapterWeights,
           fs::exists(adapter / "adapter_model.bin", error)
               ? " (adapter_model.bin, PyTorch's pickle, is not read: save the adapters with "
                 "safe_serialization=True)"
               : " (expected the adapters' weights beside adapter_config.json)");
}

config::BaseModel locate_base(const std::string& name) {
  config::BaseModel base = config::locate_base_model(name, "main", false);
  AT_CHECK(!base.folder.empty(), "--base-model-path ", base.missing_message());
  AT_CHECK(!is_adapter_folder(base.folder), "--base-model-path ", name,
           " is an adapter folder; expected the model the adapters were trained on");
  return base;
}

// The tokenizer the merged folder carries, as AutoTrain's merge saves the adapter folder's:
// its tokenizer.json, or autotrain's gpt2/byte named by autotrain_tokenizer.json; else the base's.
std::string merged_tokenizer(const fs::path& adapter, const fs::path& base,
                             const ModelFolderConfig& base_config) {
  std::error_code error;
  if (fs::is_regular_file(adapter / "tokenizer.json", error)) return adapter.string();
  if (std::string name = autotrain_tokenizer_name(adapter); !name.empty()) return name;
  if (fs::is_regular_file(base / "tokenizer.json", error)) return base.string();
  return base_config.tokenizer;
}

// AutoTrain resizes the embeddings to the tokenizer (resize_token_embeddings(len(tokenizer),
// pad_to_multiple_of)); new rows would be values no adapter trained, drawn at random by
// transformers, so autotrain merges only where no row is added.
void check_vocabulary(const AdapterMerge& merge, const data::Tokenizer& tokenizer,
                      int64_t vocab_size) {
  AT_CHECK(tokenizer.vocab_size() <= vocab_size, "tools merge-llm-adapter: the tokenizer ",
           tokenizer.name(), " has ", tokenizer.vocab_size(), " tokens, but the base model's ",
           "embeddings have ", vocab_size,
           " rows: AutoTrain would add rows (resize_token_embeddings) that no adapter trained, "
           "with random values; autotrain does not (give the base model's own tokenizer)");
  const int64_t multiple = merge.pad_to_multiple_of;
  AT_CHECK(multiple >= 0, "--pad-to-multiple-of ", multiple, ": expected a positive number");
  AT_CHECK(multiple == 0 || vocab_size % multiple == 0, "--pad-to-multiple-of ", multiple,
           ": the base model's vocabulary of ", vocab_size,
           " rows is not a multiple of it, and padding would add embedding rows that "
           "transformers fills with random draws (resize_token_embeddings), which a merge "
           "should not invent; autotrain pads nothing (leave --pad-to-multiple-of out, or give a "
           "divisor of ",
           vocab_size, ")");
}

// The adapters of `adapter` on `base`'s layout; errors name the file and say which base.
std::vector<float> read_adapters(const fs::path& adapter, const LoraModel& lora,
                                 const fs::path& base) {
  try {
    return read_adapter_weights(adapter, lora.adapters);
  } catch (const Error& error) {
    throw Error(cat(error.what(), "; the base model is ", base.string(),
                    " (adapters trained on another model do not fit it)"));
  }
}

}  // namespace

std::string merge_adapter_folder(const AdapterMerge& merge) {
  AT_CHECK(!merge.output.empty(), "tools merge-llm-adapter: --output-folder DIR is required");
  check_adapter_folder(merge.adapter);
  const AdapterConfig adapter = read_adapter_config(merge.adapter);
  const config::BaseModel base = locate_base(merge.base_model);
  const ModelFolderConfig base_config = read_model_config(base.folder);

  config::TrainingParams params;
  params.export_dtype = merge.export_dtype;
  params.max_shard_size = merge.max_shard_size;
  params.tokenizer = merged_tokenizer(merge.adapter, base.folder, base_config);

  std::optional<LoraModel> lora;
  try {
    lora.emplace(base_config.shape, adapter.options, 1);
  } catch (const Error& error) {
    throw Error(cat((merge.adapter / kAdapterConfig).string(), ": ", error.what(),
                    " of the base model ", base.folder.string()));
  }
  const std::vector<float> adapters = read_adapters(merge.adapter, *lora, base.folder);
  check_vocabulary(merge, *data::make_tokenizer(params.tokenizer), base_config.shape.vocab_size);
  std::vector<float> values(lora->base.padded_size(), 0.0f);
  PretrainedWeights(base.folder, lora->base).fill(lora->base, values, 0);
  merge_adapters(*lora, adapters, values);

  const std::string summary =
      export_model_values(lora->base, values, params, merge.output, base.folder);
  // An adapter folder left here would be read instead of the merged model.
  std::error_code error;
  fs::remove(merge.output / kAdapterConfig, error);
  fs::remove(merge.output / kAdapterWeights, error);
  return summary;
}

}  // namespace autotrain::train
