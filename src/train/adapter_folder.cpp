#include "autotrain/train/adapter_folder.hpp"

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "autotrain/ckpt/safetensors.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/strings.hpp"

namespace autotrain::train {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json read_json(const fs::path& path) {
  std::ifstream in(path);
  AT_CHECK(in.good(), "cannot read ", path.string());
  try {
    const json value = json::parse(in);
    AT_CHECK(value.is_object(), path.string(), ": expected a JSON object");
    return value;
  } catch (const json::exception& error) {
    throw Error(cat(path.string(), ": not valid JSON: ", error.what()));
  }
}

// A key whose value must leave a feature of PEFT's off.
void expect_off(const json& config, const fs::path& path, const char* key, const json& off) {
  const auto found = config.find(key);
  if (found == config.end() || found->is_null() || *found == off ||
      (found->is_object() && found->empty()))
    return;
  throw Error(cat(path.string(), ": ", key, " ", found->dump(), " is not supported (expected ",
                  off.dump(), "): autotrain's LoRA computes W + lora_alpha / r · B · A only"));
}

// A key LoRA cannot do without.
void expect_present(const json& config, const fs::path& path, const char* key,
                    const char* expected) {
  const auto found = config.find(key);
  AT_CHECK(found != config.end() && !found->is_null(), path.string(), ": ", key,
           " is missing (expected ", expected, ")");
}

std::string shape_text(const std::vector<std::uint64_t>& shape) {
  std::vector<std::string> parts;
  for (const auto extent : shape) parts.push_back(cat(extent));
  return "[" + join(parts, ", ") + "]";
}

}  // namespace

bool is_adapter_folder(const fs::path& dir) {
  std::error_code error;
  return fs::is_regular_file(dir / kAdapterConfig, error);
}

AdapterConfig read_adapter_config(const fs::path& dir) {
  const fs::path path = dir / kAdapterConfig;
  const json config = read_json(path);
  AdapterConfig out;
  try {
    const std::string type = config.value("peft_type", std::string());
    AT_CHECK(type == "LORA", path.string(), ": peft_type '", type, "': expected LORA");
    expect_present(config, path, "r", "LoRA's rank, an integer >= 1");
    expect_present(config, path, "lora_alpha", "LoRA's alpha, a number (the scale is alpha / r)");
    expect_present(config, path, "target_modules",
                   "the adapted modules' names, a list or a string");
    out.options.r = config.at("r").get<int>();
    AT_CHECK(out.options.r >= 1, path.string(), ": r ", out.options.r, ": expected >= 1");
    out.options.alpha = config.at("lora_alpha").get<double>();
    const json& targets = config.at("target_modules");
    if (targets.is_string()) {
      out.options.target_modules = model::parse_target_modules(targets.get<std::string>());
    } else {
      out.options.target_modules = targets.get<std::vector<std::string>>();
    }
    const auto base = config.find("base_model_name_or_path");
    if (base != config.end() && base->is_string()) out.base_model = base->get<std::string>();
  } catch (const json::exception& error) {
    throw Error(cat(path.string(), ": ", error.what()));
  }
  expect_off(config, path, "use_rslora", false);
  expect_off(config, path, "use_dora", false);
  expect_off(config, path, "bias", "none");
  expect_off(config, path, "modules_to_save", nullptr);
  expect_off(config, path, "rank_pattern", json::object());
  expect_off(config, path, "alpha_pattern", json::object());
  expect_off(config, path, "layers_to_transform", nullptr);
  return out;
}

std::string adapter_config_json(const LoraModel& lora, const std::string& base_model) {
  std::vector<std::string> modules = lora.options.target_modules;
  if (modules.size() == 1 && modules[0] == "all-linear") {
    // As PEFT saves all-linear: the names of the modules it resolved to.
    std::set<std::string> names;
    for (const auto& target : lora.lora.targets())
      names.insert(target.module.substr(target.module.rfind('.') + 1));
    modules.assign(names.begin(), names.end());
  }
  const nlohmann::ordered_json config = {
      {"alpha_pattern", json::object()},
      {"base_model_name_or_path", base_model.empty() ? json(nullptr) : json(base_model)},
      {"bias", "none"},
      {"fan_in_fan_out", lora.base.family().conv1d_weights()},
      {"inference_mode", true},
      {"init_lora_weights", true},
      {"layers_to_transform", nullptr},
      {"lora_alpha", lora.options.alpha},
      {"lora_dropout", lora.options.dropout},
      {"modules_to_save", nullptr},
      {"peft_type", "LORA"},
      {"r", lora.options.r},
      {"rank_pattern", json::object()},
      {"target_modules", modules},
      {"task_type", "CAUSAL_LM"},
      {"use_dora", false},
      {"use_rslora", false}};
  return config.dump(2) + "\n";
}

std::vector<float> read_adapter_weights(const fs::path& dir, const model::ParamLayout& adapters) {
  const ckpt::SafetensorsFile file(dir / kAdapterWeights);
  std::vector<float> values(adapters.padded_size(), 0.0f);
  std::set<std::string> seen;
  for (const model::ParamTensor& tensor : adapters.tensors()) {
    const ckpt::SafetensorsEntry& entry = file.entry(tensor.name);
    const std::vector<std::uint64_t> expected(tensor.shape.begin(), tensor.shape.end());
    AT_CHECK(entry.shape == expected, file.path().string(), ": ", tensor.name, " has shape ",
             shape_text(entry.shape), ", expected ", shape_text(expected),
             " (adapter_config.json's r and target_modules)");
    file.read_range(entry, 0, std::span<float>(values.data() + tensor.offset, tensor.numel));
    seen.insert(tensor.name);
  }
  for (const auto& entry : file.entries()) {
    AT_CHECK(seen.contains(entry.name), file.path().string(), ": tensor ", entry.name,
             " is not an adapter of adapter_config.json's target_modules");
  }
  return values;
}

}  // namespace autotrain::train

namespace autotrain::train {

std::string autotrain_tokenizer_name(const fs::path& dir) {
  const fs::path path = dir / "autotrain_tokenizer.json";
  std::ifstream in(path);
  if (!in) return {};
  nlohmann::json file;
  try {
    file = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& error) {
    throw Error(cat(path.string(), ": not valid JSON: ", error.what()));
  }
  const auto name = file.is_object() ? file.find("tokenizer") : file.end();
  AT_CHECK(name != file.end() && name->is_string(), path.string(),
           ": expected {\"tokenizer\": \"gpt2\" or \"byte\"}, got ", file.dump());
  return name->get<std::string>();
}

void merge_adapters(const LoraModel& lora, std::span<const float> adapters, std::span<float> base) {
  AT_CHECK(adapters.size() >= lora.adapters.padded_size() && base.size() >= lora.base.padded_size(),
           "internal: merge_adapters given buffers smaller than the layouts");
  for (int unit = 0; unit < lora.base.num_units(); ++unit) {
    if (!lora.lora.adapts(unit)) continue;
    lora.lora.merge(unit, adapters.data() + lora.adapters.units()[static_cast<size_t>(unit)].offset,
                    base.data() + lora.base.units()[static_cast<size_t>(unit)].offset);
  }
}

}  // namespace autotrain::train
