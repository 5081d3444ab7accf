#pragma once
// LoRA's adapter dropout (PEFT's lora_dropout p): each adapted module computes
//     y = W x + b + s · B · A · dropout(x),   dropout(x) = x ⊙ mask / (1 − p)
// in training, with a mask of its own (q_proj, k_proj and v_proj each draw theirs even where the
// model fuses them). The model runs over merged weights W + s · B · A (model/lora_access.hpp),
// which give W x + b + s · B · A · x, so what dropout adds is the low-rank correction
//     δ = dropout(x) − x = x ⊙ f,  f = mask / (1 − p) − 1,   u = δ · Aᵀ [N, r],   y += s · u · Bᵀ
// and its backward
//     dB += s · dyᵀ · u,   du = s · dy · B,   dA += duᵀ · δ,   dx += (du · A) ⊙ f.
// Cost O(N · r · (in + out)) per module: small beside the linear's own O(N · in · out).
//
// The mask is never stored: element (row, column) of a module's input is kept or dropped by a
// hash of (seed, optimizer step, the row's place in the step's global batch, the module,
// column). So activation checkpointing's recomputation and backward see the forward's mask, and
// a sample is masked alike on any world size and ZeRO stage (its place in the global batch does
// not depend on them: data/sampler.hpp). Evaluation and generation never drop.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace autotrain::model {

// Where a training micro-batch lies in the global order, for the masks: the micro-batch's row i
// (= b · T + t, sample b, position t) is global row first_row + i of optimizer step `step`, with
// first_row = (the micro-batch's first sample's position in the step's global batch) · T.
struct DropoutRows {
  std::uint64_t seed = 0;  // the run's seed
  std::uint64_t step = 0;  // optimizer step, from 0
  std::uint64_t first_row = 0;
};

// The dropout mask of one module's input in one micro-batch.
class DropoutMask {
 public:
  // p in [0, 1]; `module` tells the masks of a micro-batch's modules apart (the base tensor
  // index of the adapted weight: the same on every rank).
  DropoutMask(double p, const DropoutRows& rows, std::uint64_t module);

  // Whether element (row, column) of the micro-batch's input is kept (probability 1 − p).
  bool kept(std::size_t row, std::size_t column) const;
  // f = mask / (1 − p) − 1 of the element: δ = x · f.
  double factor(std::size_t row, std::size_t column) const {
    return kept(row, column) ? kept_factor_ : -1.0;
  }
  // out[j] = v[j] · f(row, j) for j < columns, or out[j] += it with `add`.
  template <typename F>
  void times_factors(std::size_t row, const F* v, F* out, std::size_t columns, bool add) const;

 private:
  std::uint64_t row_key(std::size_t row) const;

  double p_;
  double kept_factor_;  // p / (1 − p); 0 when p = 1 (nothing is kept)
  std::uint64_t key_;   // of (seed, step, module)
  std::uint64_t first_row_;
};

// One adapted module: A [r, in], B [out, r], s = lora_alpha / r.
template <typename F>
struct LoraModule {
  const F* A;
  const F* B;
  F scale;
  std::size_t in, out, r;
};

// Working memory of the correction, grown on first use and reused (nothing allocated later).
template <typename F>
struct DropoutScratch {
  std::vector<F> delta;  // [N, in]: δ, then du · A in backward
  std::vector<F> u;      // [N, r]
  std::vector<F> du;     // [N, r]
};

// y[:, :out] (row stride ldy) += s · (δ · Aᵀ) · Bᵀ for x [N, in].
template <typename F>
void lora_dropout_forward(const DropoutMask& mask, const LoraModule<F>& module, const F* x,
                          std::size_t rows, F* y, std::size_t ldy, DropoutScratch<F>& scratch);

// The correction's backward given dy[:, :out] (row stride ldy): dA [r, in] and dB [out, r]
// accumulate (+=), and dx [N, in] += its share (the linear wrote the rest).
template <typename F>
void lora_dropout_backward(const DropoutMask& mask, const LoraModule<F>& module, const F* x,
                           const F* dy, std::size_t ldy, std::size_t rows, F* dx, F* dA, F* dB,
                           DropoutScratch<F>& scratch);

}  // namespace autotrain::model
