#include "autotrain/model/lora.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include "autotrain/core/error.hpp"
#include "autotrain/core/strings.hpp"
#include "autotrain/kernels/matmul.hpp"

namespace autotrain::model {
namespace {

constexpr std::string_view kAllLinear = "all-linear";
constexpr std::string_view kPrefix = "base_model.model.";

std::string trimmed(std::string text) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string::npos) return {};
  const auto last = text.find_last_not_of(" \t");
  return text.substr(first, last - first + 1);
}

// The module path of a block's linear weight, or "" for any other tensor.
std::string linear_module(const ParamTensor& tensor) {
  constexpr std::string_view kWeight = ".weight";
  if (tensor.shape.size() != 2 || !std::string_view(tensor.name).ends_with(kWeight)) return {};
  return tensor.name.substr(0, tensor.name.size() - kWeight.size());
}

bool matches(const std::string& module, const std::string& name) {
  return module == name || (module.size() > name.size() && module.ends_with(name) &&
                            module[module.size() - name.size() - 1] == '.');
}

}  // namespace

std::vector<std::string> parse_target_modules(const std::string& text) {
  std::vector<std::string> names;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string name = trimmed(text.substr(start, comma - start));
    if (!name.empty()) names.push_back(name);
    start = comma + 1;
  }
  return names;
}

std::vector<LoraTarget> lora_targets(const ParamLayout& base, const LoraOptions& options) {
  AT_CHECK(!options.target_modules.empty(), "target_modules: expected all-linear or module names");
  const bool all = options.target_modules.size() == 1 && options.target_modules[0] == kAllLinear;
  const bool conv1d = base.family().conv1d_weights();
  std::vector<LoraTarget> targets;
  std::set<std::string> used;
  std::vector<std::string> block_modules;  // of the first block, for errors
  for (std::size_t t = 0; t < base.tensors().size(); ++t) {
    const ParamTensor& tensor = base.tensors()[t];
    if (tensor.unit == 0 || tensor.unit == base.final_norm_unit()) continue;
    const std::string module = linear_module(tensor);
    if (module.empty()) continue;
    if (tensor.unit == 1) block_modules.push_back(module.substr(module.rfind('.') + 1));
    bool chosen = all;
    for (const std::string& name : options.target_modules) {
      if (name != kAllLinear && matches(module, name)) {
        chosen = true;
        used.insert(name);
      }
    }
    if (!chosen) continue;
    const std::int64_t rows = tensor.shape[0], columns = tensor.shape[1];
    targets.push_back({module, tensor.unit, static_cast<int>(t), conv1d ? rows : columns,
                       conv1d ? columns : rows});
  }
  for (const std::string& name : options.target_modules) {
    AT_CHECK(name != kAllLinear || all, "target_modules: all-linear cannot be combined with names");
    if (name == kAllLinear || used.contains(name)) continue;
    throw Error(cat("target_modules: '", name, "' names no linear layer of the ",
                    base.family().describe(base.config()),
                    " model; its blocks have: ", join(block_modules, ", "), " (or all-linear)",
                    did_you_mean(name, block_modules)));
  }
  AT_CHECK(!targets.empty(), "target_modules: the model has no linear layer to adapt");
  return targets;
}

ParamLayout lora_layout(const ParamLayout& base, const LoraOptions& options, int world_size) {
  AT_CHECK(options.r >= 1, "lora_r must be >= 1, got ", options.r);
  std::vector<UnitSpec> units;
  for (const ParamUnit& unit : base.units()) units.push_back({unit.name, {}});
  for (const LoraTarget& target : lora_targets(base, options)) {
    const std::string name = cat(kPrefix, target.module);
    const InitRule kaiming{InitRule::uniform, 0, 1.0 / std::sqrt(double(target.in))};
    auto& tensors = units[static_cast<std::size_t>(target.unit)].tensors;
    tensors.push_back({name + ".lora_A.weight", {options.r, target.in}, kaiming, true});
    tensors.push_back({name + ".lora_B.weight", {target.out, options.r}, InitRule{}, true});
  }
  return ParamLayout(base.config(), std::move(units), world_size);
}

LoraAdapters::LoraAdapters(const ParamLayout& base, const ParamLayout& adapters,
                           const LoraOptions& options)
    : options_(options),
      conv1d_(base.family().conv1d_weights()),
      targets_(lora_targets(base, options)),
      links_(static_cast<std::size_t>(base.num_units())) {
  AT_CHECK(adapters.num_units() == base.num_units(),
           "LoRA: the adapters' layout has another unit structure than the model's");
  for (const LoraTarget& target : targets_) {
    const ParamTensor& weight = base.tensors()[static_cast<std::size_t>(target.weight)];
    const std::string name = cat(kPrefix, target.module);
    const ParamTensor& a = adapters.tensor(name + ".lora_A.weight");
    const ParamTensor& b = adapters.tensor(name + ".lora_B.weight");
    const std::vector<std::int64_t> a_shape{options.r, target.in}, b_shape{target.out, options.r};
    AT_CHECK(a.shape == a_shape && b.shape == b_shape, "LoRA: the adapters of ", target.module,
             " have another shape than rank ", options.r);
    links_[static_cast<std::size_t>(target.unit)].push_back(
        {target.weight, base.offset_in_unit(weight), adapters.offset_in_unit(a),
         adapters.offset_in_unit(b), static_cast<std::size_t>(target.in),
         static_cast<std::size_t>(target.out)});
  }
}

namespace {

// kernels::gemm adding into c (beta 1), for merge_with and project_grads_with.
template <typename F>
auto cpu_gemm() {
  return [](kernels::Transpose ta, kernels::Transpose tb, std::size_t M, std::size_t N,
            std::size_t K, double alpha, const F* a, std::size_t lda, const F* b, std::size_t ldb,
            F* c, std::size_t ldc) {
    kernels::gemm(ta, tb, M, N, K, static_cast<F>(alpha), a, lda, b, ldb, F(1), c, ldc);
  };
}

}  // namespace

template <typename F>
void LoraAdapters::merge(int unit, const F* adapter_unit, F* base_unit) const {
  merge_with(unit, adapter_unit, base_unit, cpu_gemm<F>());
}

template <typename F>
void LoraAdapters::project_grads(int unit, const F* adapter_unit, const F* merged_grads,
                                 F* adapter_grads) const {
  project_grads_with(unit, adapter_unit, merged_grads, adapter_grads, cpu_gemm<F>());
}

void LoraAdapters::check_dropout_link(const Link& link, std::size_t weight, std::size_t in,
                                      std::size_t out) const {
  if (conv1d_) {
    AT_CHECK(link.weight == weight && link.in == in && link.out == out,
             "internal: LoRA dropout on a Conv1D weight that is not one module");
  } else {
    AT_CHECK(link.in == in && (link.weight - weight) % in == 0,
             "internal: LoRA dropout on a linear that splits an adapted weight");
  }
}

template void LoraAdapters::merge(int, const float*, float*) const;
template void LoraAdapters::merge(int, const double*, double*) const;
template void LoraAdapters::project_grads(int, const float*, const float*, float*) const;
template void LoraAdapters::project_grads(int, const double*, const double*, double*) const;

}  // namespace autotrain::model
