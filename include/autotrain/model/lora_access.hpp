#pragma once
// The unit hooks of a model whose weights are frozen and whose LoRA adapters train
// (model/lora.hpp): the model runs as it always does, over merged weights W + s · B · A, and the
// gradients it computes for them become those of A and B.
//
//   params(u)       the adapters of unit u from `adapters` (the engine: gathered under ZeRO-3)
//                   and its frozen weights from `base` (the engine's frozen hooks: gathered
//                   under ZeRO-3 too); a unit with adapters is merged into a scratch copy of its
//                   base values, and `base` releases the unit at once; one without is the
//                   frozen base itself, released with release(u)
//   grads(u)        a scratch buffer for the merged weights' gradients, zeroed at the unit's
//                   first contribution; units without adapters are frozen(u): the models skip
//                   their gradients (GPT-2's final norm, which still asks, gets a scratch)
//   grads_ready(u)  the scratch is projected onto A and B (dA = s · Bᵀ · dW, dB = s · dW · Aᵀ)
//                   into adapters.grads(u), which is then ready
//
// Without adapter dropout this is LoRA exactly: the product of y = (W + s·B·A) x with respect to
// A and B. With it (options().dropout > 0, between train_on() and evaluate()), the access is also
// the units' linear adapter (model/linear_adapter.hpp): at each adapted linear it adds the
// low-rank correction that dropout makes to the merged product and its gradients
// (model/lora_dropout.hpp); the models call it in forward, in backward's recomputation and in
// backward, and the mask of each is a function of the rows, so all three agree. The frozen weights
// take no optimizer state and no gradient buffer of their own; the cost is the scratch of the units
// open at once and the blocks' weight gradients in backward.
#include <cstddef>
#include <map>
#include <vector>

#include "autotrain/model/lora.hpp"
#include "autotrain/model/unit_access.hpp"

namespace autotrain::model {

template <typename F>
class BasicLoraAccess final : public BasicUnitAccess<F>,
                              public DropoutPhase,
                              private BasicLinearAdapter<F> {
 public:
  // base: the frozen weights of base_layout's units (only params and release are called; a unit's
  // tensors at base_layout's offsets inside it, whatever the padding); adapters: the access to
  // the adapters' layout. All must outlive this.
  BasicLoraAccess(const ParamLayout& base_layout, BasicUnitAccess<F>& base,
                  const LoraAdapters& lora, const ParamLayout& adapter_layout,
                  BasicUnitAccess<F>& adapters)
      : base_layout_(base_layout),
        base_(base),
        lora_(lora),
        adapter_layout_(adapter_layout),
        adapters_(adapters),
        adapter_values_(static_cast<std::size_t>(base_layout.num_units())) {}

  const F* params(int unit) override {
    const F* values = adapters_.params(unit);
    const std::size_t numel = adapter_layout_.units()[static_cast<std::size_t>(unit)].numel;
    auto& kept = adapter_values_[static_cast<std::size_t>(unit)];
    kept.assign(values, values + numel);  // for grads_ready, which may come after release
    if (!lora_.adapts(unit)) return base_.params(unit);
    Scratch& merged = merged_[unit];
    if (merged.users++ == 0) {
      merged.values = take(base_layout_.units()[static_cast<std::size_t>(unit)].numel);
      const F* base = base_.params(unit);
      std::copy(base, base + merged.values.size(), merged.values.begin());
      base_.release(unit);  // the model reads the merged copy: a gathered unit is free again
      lora_.merge(unit, kept.data(), merged.values.data());
    }
    return merged.values.data();
  }

  void release(int unit) override {
    adapters_.release(unit);
    if (!lora_.adapts(unit)) {
      base_.release(unit);
      return;
    }
    const auto open = merged_.find(unit);
    if (open == merged_.end() || --open->second.users > 0) return;
    give_back(std::move(open->second.values));
    merged_.erase(open);
  }

  F* grads(int unit) override {
    auto open = grads_.find(unit);
    if (open == grads_.end()) {
      std::vector<F> scratch = take(base_layout_.units()[static_cast<std::size_t>(unit)].numel);
      std::fill(scratch.begin(), scratch.end(), F(0));
      open = grads_.emplace(unit, std::move(scratch)).first;
    }
    return open->second.data();
  }

  void grads_ready(int unit) override {
    F* into = adapters_.grads(unit);
    const auto open = grads_.find(unit);
    if (open != grads_.end()) {
      if (lora_.adapts(unit)) {
        lora_.project_grads(unit, adapter_values_[static_cast<std::size_t>(unit)].data(),
                            open->second.data(), into);
      }
      give_back(std::move(open->second));
      grads_.erase(open);
    }
    adapters_.grads_ready(unit);
  }

  // A unit without adapters needs no gradient (the models then skip it: model/unit_access.hpp).
  bool frozen(int unit) const override { return !lora_.adapts(unit); }

  // With adapter dropout in training (DropoutPhase::train_on), the units' linear adapter.
  BasicLinearAdapter<F>* linear_adapter(int unit) override {
    return drops(lora_, unit) ? this : nullptr;
  }

  // Bytes of scratch this access has allocated so far (merged weights and their gradients, the
  // dropout correction's).
  std::size_t scratch_bytes() const { return scratch_bytes_ + dropout_ops_.bytes(); }

 private:
  struct Scratch {
    std::vector<F> values;
    int users = 0;
  };

  void forward(int unit, std::size_t weight, const F* x, F* y, std::size_t rows, std::size_t in,
               std::size_t out) override {
    lora_.dropout_forward(unit, adapter_values_[static_cast<std::size_t>(unit)].data(),
                          dropout_rows(), weight, x, y, rows, in, out, dropout_ops_);
  }
  void backward(int unit, std::size_t weight, const F* x, const F* dy, F* dx, std::size_t rows,
                std::size_t in, std::size_t out) override {
    // The correction's gradients of A and B go straight to the adapters'; grads_ready(unit)
    // adds the merged weights' after them.
    lora_.dropout_backward(unit, adapter_values_[static_cast<std::size_t>(unit)].data(),
                           dropout_rows(), weight, x, dy, dx, adapters_.grads(unit), rows, in, out,
                           dropout_ops_);
  }

  // A buffer of `numel` elements from those given back, or a new one.
  std::vector<F> take(std::size_t numel) {
    auto& spare = spare_[numel];
    if (spare.empty()) {
      scratch_bytes_ += numel * sizeof(F);
      return std::vector<F>(numel);
    }
    std::vector<F> buffer = std::move(spare.back());
    spare.pop_back();
    return buffer;
  }
  void give_back(std::vector<F> buffer) { spare_[buffer.size()].push_back(std::move(buffer)); }

  const ParamLayout& base_layout_;
  BasicUnitAccess<F>& base_;
  const LoraAdapters& lora_;
  const ParamLayout& adapter_layout_;
  BasicUnitAccess<F>& adapters_;
  std::vector<std::vector<F>> adapter_values_;  // per unit, as params() last saw them
  std::map<int, Scratch> merged_;
  std::map<int, std::vector<F>> grads_;
  std::map<std::size_t, std::vector<std::vector<F>>> spare_;  // by size
  std::size_t scratch_bytes_ = 0;
  CpuDropoutOps<F> dropout_ops_;
};

using LoraAccess = BasicLoraAccess<float>;

}  // namespace autotrain::model
