#include "autotrain/model/param_layout.hpp"

#include "autotrain/core/error.hpp"
#include "autotrain/core/strings.hpp"

namespace autotrain::model {

ParamLayout::ParamLayout(const ModelConfig& config, int world_size, std::size_t alignment)
    : ParamLayout(config, family_of(config).units(config), world_size, alignment) {}

ParamLayout::ParamLayout(const ModelConfig& config, std::vector<UnitSpec> units, int world_size,
                         std::size_t alignment)
    : config_(config), world_size_(world_size), alignment_(alignment) {
  config_.validate();
  AT_CHECK(world_size >= 1, "parameter layout: world_size must be >= 1, got ", world_size);
  AT_CHECK(alignment >= 1, "parameter layout: alignment must be >= 1, got ", alignment);
  const std::size_t quantum = static_cast<std::size_t>(world_size) * alignment;
  std::size_t offset = 0;
  for (UnitSpec& spec : units) {
    ParamUnit unit{std::move(spec.name), offset, 0, 0, static_cast<int>(tensors_.size()), 0};
    for (TensorSpec& t : spec.tensors) {
      std::size_t numel = 1;
      for (auto d : t.shape) numel *= static_cast<std::size_t>(d);
      tensors_.push_back({std::move(t.name), std::move(t.shape), offset, numel,
                          static_cast<int>(units_.size()), t.weight_decay, t.init, t.file_rows,
                          t.role});
      offset += numel;
      unit.numel += numel;
      unit.tensor_count += 1;
    }
    unit.padded_numel = (unit.numel + quantum - 1) / quantum * quantum;
    offset = unit.offset + unit.padded_numel;
    units_.push_back(std::move(unit));
  }
  AT_CHECK(num_units() == config_.n_layer + 2,
           "internal: a family's units are the embeddings, one per block and a last one");
  hook_order_ = family().hook_order(config_);
  padded_size_ = offset;
  for (const auto& t : tensors_) num_parameters_ += t.file_numel();
}

std::vector<std::uint64_t> ParamTensor::file_shape() const {
  std::vector<std::uint64_t> out(shape.begin(), shape.end());
  if (file_rows >= 0) out[0] = static_cast<std::uint64_t>(file_rows);
  return out;
}

std::size_t ParamTensor::file_numel() const {
  if (file_rows < 0) return numel;
  return numel / static_cast<std::size_t>(shape[0]) * static_cast<std::size_t>(file_rows);
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

std::size_t ParamLayout::role_offset(int unit, Role role) const {
  const ParamUnit& u = units_.at(static_cast<std::size_t>(unit));
  for (int t = u.first_tensor; t < u.first_tensor + u.tensor_count; ++t) {
    if (tensors_[static_cast<std::size_t>(t)].role == role) {
      return offset_in_unit(tensors_[static_cast<std::size_t>(t)]);
    }
  }
  return kNoTensor;
}

const ParamTensor& ParamLayout::tensor(std::string_view name) const {
  for (const auto& t : tensors_) {
    if (t.name == name) return t;
  }
  std::vector<std::string> names;
  for (const auto& t : tensors_) names.push_back(t.name);
  throw Error(cat("no parameter named '", name, "' in the ", family().describe(config_), " layout",
                  did_you_mean(name, names)));
}

}  // namespace autotrain::model
