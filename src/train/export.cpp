#include "autotrain/train/export.hpp"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "autotrain/ckpt/safetensors.hpp"
#include "autotrain/config/base_model.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/log.hpp"
#include "autotrain/core/mpi.hpp"
#include "autotrain/core/paths.hpp"
#include "autotrain/data/tokenizer.hpp"
#include "autotrain/model/family.hpp"
#include "autotrain/model/folder.hpp"
#include "autotrain/train/adapter_folder.hpp"

namespace autotrain::train {
namespace {

void write_text(const std::filesystem::path& path, const std::string& text) {
  write_file_atomically(path, text);
}

// The run's tokenizer, loaded (on rank 0) the first time an export's files need it and kept for
// the rest of that export: a Llama 3 tokenizer.json takes most of a second to load, and a LoRA
// export with merge_adapter writes tokenizer files twice.
class RunTokenizer {
 public:
  explicit RunTokenizer(const std::string& spec) : spec_(spec) {}
  const std::string& spec() const { return spec_; }
  const data::Tokenizer& get() {
    if (!loaded_) loaded_ = data::make_tokenizer(spec_);
    return *loaded_;
  }

 private:
  std::string spec_;
  std::unique_ptr<data::Tokenizer> loaded_;
};

// A tokenizer.json and the configuration files beside it, copied as they are.
// The first file is the tokenizer.json, whatever its name was.
void copy_tokenizer_json(const std::filesystem::path& dir, const data::Tokenizer& tokenizer) {
  const auto files = tokenizer.vocabulary_files();
  for (size_t i = 0; i < files.size(); ++i) {
    std::filesystem::copy_file(files[i], dir / (i == 0 ? "tokenizer.json" : files[i].filename()),
                               std::filesystem::copy_options::overwrite_existing);
  }
}

void write_tokenizer_files(const std::filesystem::path& dir, const model::ModelConfig& config,
                           RunTokenizer& run_tokenizer) {
  const std::string& tokenizer = run_tokenizer.spec();
  if (tokenizer != "gpt2" && tokenizer != "byte") {
    copy_tokenizer_json(dir, run_tokenizer.get());
    return;
  }
  if (tokenizer != "gpt2") {
    // Hugging Face has no byte-level tokenizer class for raw bytes; autotrain generate reads this.
    write_text(dir / "autotrain_tokenizer.json",
               nlohmann::json{{"tokenizer", tokenizer}}.dump(2) + "\n");
    return;
  }
  const auto vocab = data_dir() / "gpt2";
  const auto copy = [&](const char* from, const char* to) {
    std::filesystem::copy_file(vocab / from, dir / to,
                               std::filesystem::copy_options::overwrite_existing);
  };
  // transformers' GPT2Tokenizer reads vocab.json + merges.txt; ours reads encoder.json + vocab.bpe.
  copy("encoder.json", "vocab.json");
  copy("vocab.bpe", "merges.txt");
  copy("encoder.json", "encoder.json");
  copy("vocab.bpe", "vocab.bpe");
  nlohmann::ordered_json tokenizer_config = {
      {"tokenizer_class", "GPT2Tokenizer"}, {"model_max_length", config.block_size},
      {"bos_token", "<|endoftext|>"},       {"eos_token", "<|endoftext|>"},
      {"unk_token", "<|endoftext|>"},       {"add_prefix_space", false}};
  write_text(dir / "tokenizer_config.json", tokenizer_config.dump(2) + "\n");
  nlohmann::ordered_json special = {{"bos_token", "<|endoftext|>"},
                                    {"eos_token", "<|endoftext|>"},
                                    {"unk_token", "<|endoftext|>"}};
  write_text(dir / "special_tokens_map.json", special.dump(2) + "\n");
  write_text(dir / "autotrain_tokenizer.json",
             nlohmann::json{{"tokenizer", tokenizer}}.dump(2) + "\n");
}

// The base model's config.json with this model's fields (its shape and options, the dtype,
// autotrain's own keys) over it; the base's token ids (a pad_token_id when it is not null) and
// dropout rates are kept.
std::string merged_config_json(const std::filesystem::path& base_folder, const std::string& ours) {
  auto merged = nlohmann::ordered_json::parse(model::read_config_json(base_folder).dump());
  const auto own = nlohmann::ordered_json::parse(ours);
  for (const auto& [key, value] : own.items()) {
    const bool base_owns =
        key == "bos_token_id" || key == "eos_token_id" || key.ends_with("_pdrop") ||
        key.ends_with("dropout") ||
        (key == "pad_token_id" && !merged.value(key, nlohmann::json()).is_null());
    if (!base_owns || !merged.contains(key)) merged[key] = value;
  }
  return merged.dump(2) + "\n";
}

// The exported weights as save_pretrained lays them out: one model.safetensors, or, above
// max_bytes, model-0000i-of-0000N.safetensors (tensors in order, a shard full before the next
// starts; a tensor larger than max_bytes alone) with model.safetensors.index.json.
class WeightFiles {
 public:
  WeightFiles(std::filesystem::path dir, const std::vector<ckpt::SafetensorsEntry>& entries,
              uint64_t max_bytes, std::string stem)
      : dir_(std::move(dir)), stem_(std::move(stem)) {
    uint64_t bytes_in_shard = 0;
    for (const auto& entry : entries) {
      const uint64_t bytes = entry.elements() * dtype_size(entry.dtype);
      if (shards_.empty() || (bytes_in_shard > 0 && bytes_in_shard + bytes > max_bytes)) {
        shards_.emplace_back();
        bytes_in_shard = 0;
      }
      shards_.back().push_back(entry);
      bytes_in_shard += bytes;
      total_bytes_ += bytes;
    }
    for (size_t s = 0; s < shards_.size(); ++s) {
      char name[64];
      std::snprintf(name, sizeof name, "-%05zu-of-%05zu.safetensors", s + 1, shards_.size());
      names_.push_back(stem_ + (shards_.size() == 1 ? std::string(".safetensors") : name));
    }
  }

  // The next tensor's values, whole.
  void append_tensor(std::span<const float> values) {
    if (!writer_) {
      writer_.emplace(dir_ / names_[shard_], shards_[shard_],
                      std::map<std::string, std::string>{{"format", "pt"}});
    }
    writer_->append(values);
    if (++tensor_ == shards_[shard_].size()) {
      writer_->finish();
      writer_.reset();
      ++shard_;
      tensor_ = 0;
    }
  }

  // Writes the index (when sharded) and removes the files of the other layout an earlier
  // export left, so a loader never mixes them.
  void finish() {
    AT_CHECK(shard_ == shards_.size(), "export: ", shards_.size() - shard_,
             " weight file(s) not written");
    namespace fs = std::filesystem;
    const bool sharded = shards_.size() > 1;
    std::error_code error;
    for (const auto& file : fs::directory_iterator(dir_, error)) {
      const std::string name = file.path().filename().string();
      const bool ours = std::find(names_.begin(), names_.end(), name) != names_.end();
      const bool weights = name == stem_ + ".safetensors" ||
                           (name.starts_with(stem_ + "-") && name.ends_with(".safetensors"));
      if (weights && !ours) fs::remove(file.path(), error);
    }
    if (!sharded) {
      fs::remove(dir_ / (stem_ + ".safetensors.index.json"), error);
      return;
    }
    nlohmann::ordered_json map = nlohmann::ordered_json::object();
    for (size_t s = 0; s < shards_.size(); ++s) {
      for (const auto& entry : shards_[s]) map[entry.name] = names_[s];
    }
    const nlohmann::ordered_json index = {{"metadata", {{"total_size", total_bytes_}}},
                                          {"weight_map", map}};
    write_text(dir_ / (stem_ + ".safetensors.index.json"), index.dump(2) + "\n");
  }

  std::string summary() const {
    return shards_.size() == 1 ? (dir_ / names_[0]).string()
                               : cat(shards_.size(), " shards in ", dir_.string(), " (", stem_,
                                     ".safetensors.index.json)");
  }

 private:
  std::filesystem::path dir_;
  std::string stem_;  // "model", "adapter_model"
  std::vector<std::vector<ckpt::SafetensorsEntry>> shards_;
  std::vector<std::string> names_;
  uint64_t total_bytes_ = 0;
  size_t shard_ = 0;   // the shard being written
  size_t tensor_ = 0;  // tensors of it written
  std::optional<ckpt::SafetensorsWriter> writer_;
};

}  // namespace

std::string hf_config_json(const model::ModelConfig& config, const std::string& tokenizer,
                           int eos_token_id, int pad_token_id, DType dtype) {
  nlohmann::ordered_json json = model::hf_config(config);
  json["bos_token_id"] = eos_token_id;
  json["eos_token_id"] = eos_token_id;
  if (config.score_head) json["pad_token_id"] = pad_token_id;
  json["torch_dtype"] = dtype == DType::bf16   ? "bfloat16"
                        : dtype == DType::fp16 ? "float16"
                                               : "float32";
  json["autotrain_tokenizer"] = tokenizer;
  json["autotrain_version"] = version();
  return json.dump(2) + "\n";
}

namespace {

// A unit's values (collective): `out` holds them on rank 0 and is empty elsewhere.
using UnitValues = std::function<void(int unit, std::span<float> out)>;

// Streams the tensors of `layout` into `stem`.safetensors (or its shards) in `dir` on rank 0,
// one unit at a time: rank 0 never holds more than the largest unit. Returns the files' summary.
std::string write_weights(const model::ParamLayout& layout, const UnitValues& unit_values,
                          const std::filesystem::path& dir, DType dtype, uint64_t max_bytes,
                          const std::string& stem, bool root) {
  std::optional<WeightFiles> files;
  if (root) {
    std::filesystem::create_directories(dir);
    std::vector<ckpt::SafetensorsEntry> entries;
    for (const auto& tensor : layout.tensors()) {
      entries.push_back({tensor.name, dtype, tensor.file_shape()});
    }
    files.emplace(dir, entries, max_bytes, stem);
  }
  std::vector<float> values;
  for (int unit = 0; unit < layout.num_units(); ++unit) {
    const auto& info = layout.units()[static_cast<size_t>(unit)];
    if (root) values.resize(info.numel);
    unit_values(unit, std::span<float>(values.data(), root ? info.numel : 0));
    if (!root) continue;
    for (int t = info.first_tensor; t < info.first_tensor + info.tensor_count; ++t) {
      const auto& tensor = layout.tensors()[static_cast<size_t>(t)];
      files->append_tensor(std::span<const float>(values.data() + layout.offset_in_unit(tensor),
                                                  tensor.file_numel()));
    }
  }
  if (!root) return {};
  files->finish();
  return files->summary();
}

// config.json, the tokenizer files and the base's generation_config.json (rank 0).
void write_model_files(const model::ModelConfig& config, const config::TrainingParams& params,
                       const std::filesystem::path& dir, const std::filesystem::path& base_folder,
                       DType dtype, RunTokenizer& run_tokenizer) {
  const data::Tokenizer& tokenizer = run_tokenizer.get();
  const std::string ours =
      hf_config_json(config, params.tokenizer, tokenizer.eot_token(),
                     tokenizer.pad_token().value_or(tokenizer.eot_token()), dtype);
  write_text(dir / "config.json",
             base_folder.empty() ? ours : merged_config_json(base_folder, ours));
  write_tokenizer_files(dir, config, run_tokenizer);
  std::error_code error;
  if (!base_folder.empty() &&
      std::filesystem::is_regular_file(base_folder / "generation_config.json", error)) {
    std::filesystem::copy_file(base_folder / "generation_config.json",
                               dir / "generation_config.json",
                               std::filesystem::copy_options::overwrite_existing);
  }
}

UnitValues gathered(zero::ModelState& engine) {
  return [&engine](int unit, std::span<float> out) { engine.gather_unit(unit, out, 0); };
}

}  // namespace

void export_model(zero::ModelState& engine, const model::ParamLayout& layout,
                  const config::TrainingParams& params, const std::filesystem::path& dir,
                  const std::filesystem::path& base_folder) {
  const DType dtype = parse_dtype(params.export_dtype, "export_dtype");
  const std::string summary =
      write_weights(layout, gathered(engine), dir, dtype,
                    config::parse_byte_size(params.max_shard_size, "max_shard_size"), "model",
                    engine.rank() == 0);
  if (engine.rank() != 0) return;
  RunTokenizer tokenizer(params.tokenizer);
  write_model_files(layout.config(), params, dir, base_folder, dtype, tokenizer);
  log::info("export: wrote ", summary, " (", params.export_dtype,
            "), config.json and tokenizer files");
}

std::string export_model_values(const model::ParamLayout& layout, std::span<const float> values,
                                const config::TrainingParams& params,
                                const std::filesystem::path& dir,
                                const std::filesystem::path& base_folder) {
  AT_CHECK(values.size() >= layout.padded_size(), "internal: export_model_values given ",
           values.size(), " values for a layout of ", layout.padded_size());
  const UnitValues from_buffer = [&](int unit, std::span<float> out) {
    const auto& info = layout.units()[static_cast<size_t>(unit)];
    std::copy_n(values.data() + info.offset, out.size(), out.data());
  };
  const DType dtype = parse_dtype(params.export_dtype, "export_dtype");
  const std::string summary = write_weights(
      layout, from_buffer, dir, dtype,
      config::parse_byte_size(params.max_shard_size, "max_shard_size"), "model", true);
  RunTokenizer tokenizer(params.tokenizer);
  write_model_files(layout.config(), params, dir, base_folder, dtype, tokenizer);
  return summary;
}

namespace {

void write_adapter(zero::ModelState& engine, const LoraModel& lora,
                   const config::TrainingParams& params, const std::filesystem::path& dir,
                   const std::filesystem::path& base_folder, RunTokenizer& tokenizer) {
  const DType dtype = parse_dtype(params.export_dtype, "export_dtype");
  const std::string summary = write_weights(lora.adapters, gathered(engine), dir, dtype,
                                            ~uint64_t{0}, "adapter_model", engine.rank() == 0);
  if (engine.rank() != 0) return;
  write_text(dir / kAdapterConfig,
             adapter_config_json(
                 lora, lora.base_model_name.empty() ? base_folder.string() : lora.base_model_name));
  write_tokenizer_files(dir, lora.base.config(), tokenizer);
  log::info("export: wrote the LoRA adapters to ", summary, " (", params.export_dtype,
            ") with adapter_config.json and the tokenizer files");
}

}  // namespace

void export_adapter(zero::ModelState& engine, const LoraModel& lora,
                    const config::TrainingParams& params, const std::filesystem::path& dir,
                    const std::filesystem::path& base_folder) {
  RunTokenizer tokenizer(params.tokenizer);
  write_adapter(engine, lora, params, dir, base_folder, tokenizer);
}

std::string describe_export(const std::filesystem::path& dir, bool peft, bool merge_adapter) {
  const std::string adapter = cat(kAdapterWeights, ", ", kAdapterConfig);
  if (peft && !merge_adapter) return cat(dir.string(), " (", adapter, ")");
  std::error_code error;
  const bool sharded = std::filesystem::exists(dir / "model.safetensors.index.json", error);
  std::string files =
      cat(dir.string(), " (",
          sharded ? "model-*-of-*.safetensors, model.safetensors.index.json" : "model.safetensors",
          ", config.json)");
  if (peft) files += cat("; adapters in ", (dir / "adapter").string(), " (", adapter, ")");
  return files;
}

void export_lora(zero::ModelState& engine, const LoraModel& lora,
                 const config::TrainingParams& params, const std::filesystem::path& dir,
                 const std::filesystem::path& base_folder) {
  RunTokenizer tokenizer(params.tokenizer);
  if (!params.merge_adapter) {
    write_adapter(engine, lora, params, dir, base_folder, tokenizer);
    return;
  }
  write_adapter(engine, lora, params, dir / "adapter", base_folder, tokenizer);
  AT_CHECK(lora.weights != nullptr, "export: the LoRA model's base weights are not open");
  // Each unit: the base's values (rank 0 reads them) plus the gathered adapters' product.
  std::vector<float> adapters;
  const UnitValues merged = [&](int unit, std::span<float> out) {
    const auto& info = lora.adapters.units()[static_cast<size_t>(unit)];
    adapters.resize(out.empty() ? 0 : info.numel);
    engine.gather_unit(unit, adapters, 0);
    if (out.empty()) return;
    lora.weights->fill(lora.base, out, lora.base.units()[static_cast<size_t>(unit)].offset);
    if (lora.lora.adapts(unit)) lora.lora.merge(unit, adapters.data(), out.data());
  };
  const DType dtype = parse_dtype(params.export_dtype, "export_dtype");
  const std::string summary =
      write_weights(lora.base, merged, dir, dtype,
                    config::parse_byte_size(params.max_shard_size, "max_shard_size"), "model",
                    engine.rank() == 0);
  if (engine.rank() != 0) return;
  write_model_files(lora.base.config(), params, dir, base_folder, dtype, tokenizer);
  // An adapter folder an earlier export left here would be read instead of the merged model.
  std::error_code error;
  std::filesystem::remove(dir / kAdapterConfig, error);
  std::filesystem::remove(dir / kAdapterWeights, error);
  log::info("export: wrote the merged model (base + adapters) to ", summary, " (",
            params.export_dtype, "), config.json and tokenizer files");
}

}  // namespace autotrain::train
