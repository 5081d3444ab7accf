#include "autotrain/model/param_layout.hpp"

#include "autotrain/core/error.hpp"
#include "autotrain/core/strings.hpp"

namespace autotrain::model {

ParamLayout::ParamLayout(const ModelConfig& config, int world_size, std::size_t alignment)
    : config_(config), world_size_(world_size), alignment_(alignment) {
  config_.validate();
  AT_CHECK(world_size >= 1, "parameter layout: world_size must be >= 1, got ", world_size);
  AT_CHECK(alignment >= 1, "parameter layout: alignment must be >= 1, got ", alignment);
  const std::int64_t C = config.n_embd;
  const std::size_t quantum = static_cast<std::size_t>(world_size) * alignment;
  std::size_t offset = 0;

  auto begin_unit = [&](std::string name) {
    units_.push_back({std::move(name), offset, 0, 0, static_cast<int>(tensors_.size()), 0});
  };
  auto add = [&](std::string name, std::vector<std::int64_t> shape, bool decay) {
    std::size_t numel = 1;
    for (auto d : shape) numel *= static_cast<std::size_t>(d);
    ParamUnit& unit = units_.back();
    tensors_.push_back({std::move(name), std::move(shape), offset, numel,
                        static_cast<int>(units_.size()) - 1, decay});
    offset += numel;
    unit.numel += numel;
    unit.tensor_count += 1;
  };
  auto end_unit = [&] {
    ParamUnit& unit = units_.back();
    unit.padded_numel = (unit.numel + quantum - 1) / quantum * quantum;
    offset = unit.offset + unit.padded_numel;
  };

  begin_unit("embeddings");
  add("transformer.wte.weight", {config.padded_vocab_size, C}, true);
  add("transformer.wpe.weight", {config.block_size, C}, true);
  end_unit();
  for (int l = 0; l < config.n_layer; ++l) {
    const std::string h = cat("transformer.h.", l, ".");
    begin_unit(cat("h.", l));
    add(h + "ln_1.weight", {C}, false);
    add(h + "ln_1.bias", {C}, false);
    add(h + "attn.c_attn.weight", {C, 3 * C}, true);
    add(h + "attn.c_attn.bias", {3 * C}, false);
    add(h + "attn.c_proj.weight", {C, C}, true);
    add(h + "attn.c_proj.bias", {C}, false);
    add(h + "ln_2.weight", {C}, false);
    add(h + "ln_2.bias", {C}, false);
    add(h + "mlp.c_fc.weight", {C, 4 * C}, true);
    add(h + "mlp.c_fc.bias", {4 * C}, false);
    add(h + "mlp.c_proj.weight", {4 * C, C}, true);
    add(h + "mlp.c_proj.bias", {C}, false);
    end_unit();
  }
  begin_unit("ln_f");
  add("transformer.ln_f.weight", {C}, false);
  add("transformer.ln_f.bias", {C}, false);
  end_unit();

  padded_size_ = offset;
  for (const auto& t : tensors_) num_parameters_ += t.numel;
  num_parameters_ -= static_cast<std::size_t>(config.padded_vocab_size - config.vocab_size) *
                     static_cast<std::size_t>(C);
}

Range ParamLayout::shard(int unit, int rank) const {
  AT_CHECK(unit >= 0 && unit < num_units(), "parameter layout: unit ", unit, " out of range [0, ",
           num_units(), ")");
  AT_CHECK(rank >= 0 && rank < world_size_, "parameter layout: rank ", rank, " out of range [0, ",
           world_size_, ")");
  const ParamUnit& u = units_[unit];
  const std::size_t part = u.padded_numel / static_cast<std::size_t>(world_size_);
  return {u.offset + part * static_cast<std::size_t>(rank), part};
}

const ParamTensor& ParamLayout::tensor(std::string_view name) const {
  for (const auto& t : tensors_) {
    if (t.name == name) return t;
  }
  std::vector<std::string> names;
  for (const auto& t : tensors_) names.push_back(t.name);
  throw Error(
      cat("no parameter named '", name, "' in the GPT-2 layout", did_you_mean(name, names)));
}

TensorOffsets::TensorOffsets(const ParamLayout& layout) {
  const auto rel = [&](std::string_view name) {
    return layout.offset_in_unit(layout.tensor(name));
  };
  wte = rel("transformer.wte.weight");
  wpe = rel("transformer.wpe.weight");
  ln1w = rel("transformer.h.0.ln_1.weight");
  ln1b = rel("transformer.h.0.ln_1.bias");
  qkvw = rel("transformer.h.0.attn.c_attn.weight");
  qkvb = rel("transformer.h.0.attn.c_attn.bias");
  attprojw = rel("transformer.h.0.attn.c_proj.weight");
  attprojb = rel("transformer.h.0.attn.c_proj.bias");
  ln2w = rel("transformer.h.0.ln_2.weight");
  ln2b = rel("transformer.h.0.ln_2.bias");
  fcw = rel("transformer.h.0.mlp.c_fc.weight");
  fcb = rel("transformer.h.0.mlp.c_fc.bias");
  fcprojw = rel("transformer.h.0.mlp.c_proj.weight");
  fcprojb = rel("transformer.h.0.mlp.c_proj.bias");
  lnfw = rel("transformer.ln_f.weight");
  lnfb = rel("transformer.ln_f.bias");
}

}  // namespace autotrain::model
