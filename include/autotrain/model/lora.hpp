#pragma once
// LoRA (low-rank adaptation, as PEFT's LoraConfig): each targeted linear weight W of a block is
// trained as W + s · B · A, with A [r, in], B [out, r] and s = alpha / r, while W stays frozen.
//
// The adapters are a ParamLayout of their own, in the model's unit structure (unit 0 and unit
// L + 1 hold none, unit 1 + l the adapters of block l, in the order of the block's weights):
// the trainable layout that the ZeRO engine partitions, the optimizer steps and checkpoints
// store. Their names are PEFT's in adapter_model.safetensors:
//   base_model.model.<module>.lora_A.weight [r, in]   uniform in ±1/sqrt(in) (PEFT's
//                                                      Kaiming-uniform), weight decay
//   base_model.model.<module>.lora_B.weight [out, r]  zero, so training starts at the base model
// where <module> is the weight's name without ".weight" ("model.layers.0.self_attn.q_proj",
// "transformer.h.0.attn.c_attn"). GPT-2's Conv1D weights are [in, out]: B · A is added
// transposed (PEFT's fan_in_fan_out).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "autotrain/kernels/matmul.hpp"
#include "autotrain/model/lora_dropout.hpp"
#include "autotrain/model/param_layout.hpp"

namespace autotrain::model {

struct LoraOptions {
  int r = 16;
  double alpha = 32;
  // "all-linear" (every 2-D weight of the blocks: attention and MLP projections, not the
  // embeddings or the LM head), or module names matched as PEFT matches them: a module is
  // targeted when its path equals a name or ends with "." + name ("q_proj", "c_attn",
  // "mlp.c_proj").
  std::vector<std::string> target_modules{"all-linear"};
  // PEFT's lora_dropout on each adapted module's input in training (model/lora_dropout.hpp).
  double dropout = 0;
  double scale() const { return alpha / r; }
};

// AutoTrain's target_modules string: "all-linear", or names separated by commas.
std::vector<std::string> parse_target_modules(const std::string& text);

// One adapted weight.
struct LoraTarget {
  std::string module;  // "model.layers.0.self_attn.q_proj"
  int unit = 0;
  int weight = 0;  // index of the base tensor in the base layout
  std::int64_t in = 0;
  std::int64_t out = 0;
};

// The weights options.target_modules names, in the base layout's order. An Error when a name
// matches no weight (listing the module names of a block).
std::vector<LoraTarget> lora_targets(const ParamLayout& base, const LoraOptions& options);

// The adapters' layout for `base`'s model, its units padded for world_size.
ParamLayout lora_layout(const ParamLayout& base, const LoraOptions& options, int world_size);

// The arithmetic between a base layout and its adapters' layout, unit by unit; F is float or
// double. Pointers are to the start of a unit of the respective layout.
class LoraAdapters {
 public:
  LoraAdapters(const ParamLayout& base, const ParamLayout& adapters, const LoraOptions& options);

  const LoraOptions& options() const { return options_; }
  const std::vector<LoraTarget>& targets() const { return targets_; }
  bool adapts(int unit) const { return !links_[static_cast<std::size_t>(unit)].empty(); }

  // base_unit += s · B · A for each adapted weight of the unit (the merged weights).
  template <typename F>
  void merge(int unit, const F* adapter_unit, F* base_unit) const;
  // adapter_grads += the gradients of A and B, given those of the merged weights
  // (dA = s · Bᵀ · dW, dB = s · dW · Aᵀ).
  template <typename F>
  void project_grads(int unit, const F* adapter_unit, const F* merged_grads,
                     F* adapter_grads) const;

  // The same two as products for any device: gemm(ta, tb, M, N, K, alpha, a, lda, b, ldb, c, ldc)
  // must add alpha · op(a)[M, K] · op(b)[K, N] into the row-major c (kernels::gemm with beta 1).
  // The pointers are the caller's (a GPU's memory, say); only offsets are added to them.
  template <typename F, typename Gemm>
  void merge_with(int unit, const F* adapter_unit, F* base_unit, Gemm&& gemm) const;
  template <typename F, typename Gemm>
  void project_grads_with(int unit, const F* adapter_unit, const F* merged_grads, F* adapter_grads,
                          Gemm&& gemm) const;

  // Adapter dropout (options().dropout > 0, in training), for the linear [out, in] whose weight
  // starts at `weight` in the unit (model/linear_adapter.hpp: it may fuse several adapted
  // weights): y += the correction of each adapted weight inside it, and in backward dx += its
  // share and adapter_grads += the gradients of A and B. `ops` is the device's arithmetic
  // (model/lora_dropout.hpp: CpuDropoutOps on the CPU); the pointers are in its memory.
  template <typename F, typename Ops>
  void dropout_forward(int unit, const F* adapter_unit, const DropoutRows& rows, std::size_t weight,
                       const F* x, F* y, std::size_t n, std::size_t in, std::size_t out,
                       Ops& ops) const {
    each_link_in(unit, weight, in, out, [&](const Link& link, std::size_t column) {
      lora_dropout_forward(mask_of(link, rows), module_of(link, adapter_unit), x, n, y + column,
                           out, ops);
    });
  }
  template <typename F, typename Ops>
  void dropout_backward(int unit, const F* adapter_unit, const DropoutRows& rows,
                        std::size_t weight, const F* x, const F* dy, F* dx, F* adapter_grads,
                        std::size_t n, std::size_t in, std::size_t out, Ops& ops) const {
    each_link_in(unit, weight, in, out, [&](const Link& link, std::size_t column) {
      lora_dropout_backward(mask_of(link, rows), module_of(link, adapter_unit), x, dy + column, out,
                            n, dx, adapter_grads + link.a, adapter_grads + link.b, ops);
    });
  }

 private:
  struct Link {
    int module = 0;          // the base tensor index: the dropout mask's key
    std::size_t weight = 0;  // offsets in their units
    std::size_t a = 0;
    std::size_t b = 0;
    std::size_t in = 0;
    std::size_t out = 0;
  };
  // visit(link, column) for each adapted weight inside the linear at `weight`, its outputs from
  // `column` of the linear's.
  template <typename Visit>
  void each_link_in(int unit, std::size_t weight, std::size_t in, std::size_t out,
                    Visit visit) const {
    for (const Link& link : links_[static_cast<std::size_t>(unit)]) {
      if (link.weight < weight || link.weight >= weight + in * out) continue;
      check_dropout_link(link, weight, in, out);
      // Conv1D [in, out]: one module (GPT-2 fuses no two adapted weights); [out, in]: the fused
      // weights are rows of one.
      visit(link, conv1d_ ? std::size_t{0} : (link.weight - weight) / in);
    }
  }
  // An Error when the linear at `weight` does not hold `link`'s weight whole.
  void check_dropout_link(const Link& link, std::size_t weight, std::size_t in,
                          std::size_t out) const;
  DropoutMask mask_of(const Link& link, const DropoutRows& rows) const {
    return DropoutMask(options_.dropout, rows, static_cast<std::uint64_t>(link.module));
  }
  template <typename F>
  LoraModule<F> module_of(const Link& link, const F* adapter_unit) const {
    return {adapter_unit + link.a,
            adapter_unit + link.b,
            options_.scale(),
            link.in,
            link.out,
            static_cast<std::size_t>(options_.r)};
  }

  LoraOptions options_;
  bool conv1d_ = false;
  std::vector<LoraTarget> targets_;
  std::vector<std::vector<Link>> links_;  // per unit
};

// Whether a LoRA access's forwards train or evaluate (model/lora_access.hpp and its device
// counterpart model/gpu/lora_access.hpp): after train_on(rows) the forwards, and the backward
// after each, train on the micro-batch at `rows`, and adapter dropout applies where
// options().dropout > 0; after evaluate(), the state at construction, nothing is dropped.
class DropoutPhase {
 public:
  void train_on(const DropoutRows& rows) {
    rows_ = rows;
    training_ = true;
  }
  void evaluate() { training_ = false; }

 protected:
  // Whether `unit`'s adapted linears drop now.
  bool drops(const LoraAdapters& lora, int unit) const {
    return training_ && lora.options().dropout > 0 && lora.adapts(unit);
  }
  const DropoutRows& dropout_rows() const { return rows_; }

 private:
  bool training_ = false;
  DropoutRows rows_;
};

template <typename F, typename Gemm>
void LoraAdapters::merge_with(int unit, const F* adapter_unit, F* base_unit, Gemm&& gemm) const {
  constexpr auto no = kernels::Transpose::no, yes = kernels::Transpose::yes;
  const double s = options_.scale();
  const auto r = static_cast<std::size_t>(options_.r);
  for (const Link& link : links_[static_cast<std::size_t>(unit)]) {
    const F* A = adapter_unit + link.a;  // [r, in]
    const F* B = adapter_unit + link.b;  // [out, r]
    F* W = base_unit + link.weight;
    if (conv1d_) {  // W [in, out] += s · Aᵀ · Bᵀ
      gemm(yes, yes, link.in, link.out, r, s, A, link.in, B, r, W, link.out);
    } else {  // W [out, in] += s · B · A
      gemm(no, no, link.out, link.in, r, s, B, r, A, link.in, W, link.in);
    }
  }
}

template <typename F, typename Gemm>
void LoraAdapters::project_grads_with(int unit, const F* adapter_unit, const F* merged_grads,
                                      F* adapter_grads, Gemm&& gemm) const {
  constexpr auto no = kernels::Transpose::no, yes = kernels::Transpose::yes;
  const double s = options_.scale();
  const auto r = static_cast<std::size_t>(options_.r);
  for (const Link& link : links_[static_cast<std::size_t>(unit)]) {
    const F* A = adapter_unit + link.a;
    const F* B = adapter_unit + link.b;
    const F* G = merged_grads + link.weight;  // dW as W is stored
    F* dA = adapter_grads + link.a;
    F* dB = adapter_grads + link.b;
    if (conv1d_) {  // G = dWᵀ [in, out]
      gemm(yes, yes, r, link.in, link.out, s, B, r, G, link.out, dA, link.in);
      gemm(yes, yes, link.out, r, link.in, s, G, link.out, A, link.in, dB, r);
    } else {  // G = dW [out, in]
      gemm(yes, no, r, link.in, link.out, s, B, r, G, link.in, dA, link.in);
      gemm(no, yes, link.out, r, link.in, s, G, link.in, A, link.in, dB, r);
    }
  }
}

}  // namespace autotrain::model
