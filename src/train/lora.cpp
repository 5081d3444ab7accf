#include "autotrain/train/lora.hpp"

#include "autotrain/core/error.hpp"
#include "autotrain/core/log.hpp"
#include "autotrain/core/strings.hpp"
#include "autotrain/train/pretrained.hpp"

namespace autotrain::train {

std::optional<model::LoraOptions> lora_options(const config::TrainingParams& params) {
  if (!params.peft) return std::nullopt;
  model::LoraOptions options;
  options.r = static_cast<int>(params.lora_r);
  options.alpha = params.lora_alpha;
  options.dropout = params.lora_dropout;
  std::vector<std::string> names = model::parse_target_modules(params.target_modules);
  const bool unset =
      names.empty() ||
      (names.size() == 1 && (names[0] == "null" || names[0] == "none" || names[0] == "None"));
  if (!unset) options.target_modules = std::move(names);
  return options;
}

std::optional<model::QuantOptions> quant_options(const config::TrainingParams& params) {
  if (!params.peft || params.quantization == "none") return std::nullopt;
  return model::QuantOptions{kernels::parse_quant_kind(params.quantization, "quantization"),
                             params.bnb_4bit_use_double_quant};
}

LoraModel::LoraModel(const model::ModelConfig& config, const model::LoraOptions& lora_options,
                     int world_size)
    : options(lora_options),
      base(config, 1),
      frozen(config, world_size),
      adapters(model::lora_layout(base, options, world_size)),
      lora(base, adapters, options) {}

const model::ParamSource& LoraModel::base_weights() const {
  AT_CHECK(weights != nullptr, "internal: the LoRA model's base weights are not open");
  return *weights;
}

std::unique_ptr<LoraModel> open_lora_model(const RunSetup& setup) {
  const auto options = lora_options(setup.params());
  if (!options) return nullptr;
  std::unique_ptr<LoraModel> lora;
  try {
    lora = std::make_unique<LoraModel>(model_config(setup.resolved), *options,
                                       setup.topology.world_size);
  } catch (const Error& error) {  // target_modules: the same on every rank
    throw CollectiveError(error.what());
  }
  lora->weights = open_base_weights(setup, lora->base);
  lora->base_model_name = setup.resolved.base_model.peft_base_name();
  lora->quantization = quant_options(setup.params());
  return lora;
}

void log_lora_plan(const LoraModel& lora, std::size_t frozen_bytes) {
  std::vector<std::string> kinds;  // the adapted modules of one block, by their last name
  for (const auto& target : lora.lora.targets()) {
    const std::string kind = target.module.substr(target.module.rfind('.') + 1);
    if (target.unit == lora.lora.targets().front().unit) kinds.push_back(kind);
  }
  const double trainable = double(lora.adapters.num_parameters());
  std::string quantized;
  if (lora.quantization) {
    const bool nf4 = lora.quantization->kind == kernels::QuantKind::nf4;
    quantized = cat("; block weights in ", nf4 ? "int4 (NF4" : "int8 (per-row absmax",
                    lora.quantization->double_quant ? ", double quantization)" : ")");
  }
  log::info(
      "lora: rank ", lora.options.r, ", alpha ", lora.options.alpha, " (scale ",
      lora.options.scale(), "), dropout ", lora.options.dropout, " on ", lora.lora.targets().size(),
      " weights (", join(kinds, ", "), " of each block); ", lora.adapters.num_parameters(),
      " trainable parameters, ", 100.0 * trainable / double(lora.base.num_parameters()),
      "% of the model's ", lora.base.num_parameters(), quantized, "; the frozen base weights take ",
      human_bytes(double(frozen_bytes)),
      " per rank (whole: ", human_bytes(double(lora.base.padded_size() * sizeof(float))), ")");
}

model::ParamLayout trainable_layout(const RunSetup& setup, const LoraModel* lora) {
  if (lora) return lora->adapters;
  return model::ParamLayout(model_config(setup.resolved), setup.topology.world_size);
}

}  // namespace autotrain::train
