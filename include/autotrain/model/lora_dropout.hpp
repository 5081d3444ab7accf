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

#include "autotrain/kernels/dropout_hash.hpp"
#include "autotrain/kernels/matmul.hpp"

namespace autotrain::model {

// Where a training micro-batch lies in the global order, for the masks: the micro-batch's row i
// (= b · T + t, sample b, position t) is global row first_row + i of optimizer step `step`, with
// first_row = (the micro-batch's first sample's position in the step's global batch) · T.
struct DropoutRows {
  std::uint64_t seed = 0;  // the run's seed
  std::uint64_t step = 0;  // optimizer step, from 0
  std::uint64_t first_row = 0;

  // Moves to optimizer step `step`, whose micro-batch of T-token samples starts at the sample
  // `first_sample` of the step's global batch (train/replica.hpp: set_training_position).
  void move_to(long long step_index, long long first_sample, int T) {
    step = static_cast<std::uint64_t>(step_index);
    first_row = static_cast<std::uint64_t>(first_sample) * static_cast<std::uint64_t>(T);
  }
};

// The dropout mask of one module's input in one micro-batch.
class DropoutMask {
 public:
  // p in [0, 1]; `module` tells the masks of a micro-batch's modules apart (the base tensor
  // index of the adapted weight: the same on every rank).
  DropoutMask(double p, const DropoutRows& rows, std::uint64_t module);

  // Whether element (row, column) of the micro-batch's input is kept (probability 1 − p).
  bool kept(std::size_t row, std::size_t column) const {
    return hash_.kept(hash_.row_key(row), column);
  }
  // f = mask / (1 − p) − 1 of the element: δ = x · f.
  double factor(std::size_t row, std::size_t column) const {
    return kept(row, column) ? kept_factor_ : -1.0;
  }
  // f of a kept element: p / (1 − p); 0 when p = 1 (nothing is kept).
  double kept_factor() const { return kept_factor_; }
  // out[j] = v[j] · f(row, j) for j < columns, or out[j] += it with `add`.
  template <typename F>
  void times_factors(std::size_t row, const F* v, F* out, std::size_t columns, bool add) const;
  // What a device kernel needs to draw the same mask (kernels/gpu/dropout.hpp).
  const kernels::DropoutHash& hash() const { return hash_; }

 private:
  double kept_factor_;
  kernels::DropoutHash hash_;
};

// One adapted module: A [r, in], B [out, r], s = lora_alpha / r.
template <typename F>
struct LoraModule {
  const F* A;
  const F* B;
  double scale;
  std::size_t in, out, r;
};

// The correction's arithmetic on one device, for the two functions below. Ops has
//   F* delta(n), F* u(n), F* du(n)   working memory of at least n elements each (δ [N, in], then
//                                    du · A in backward; u and du [N, r]), kept between calls
//   times_factors(mask, v, out, rows, columns, add)
//                                    out = v ⊙ f over row-major [rows, columns], or out += it
//   gemm(ta, tb, M, N, K, alpha, a, lda, b, ldb, beta, c, ldc)
//                                    c = alpha · op(a)[M, K] · op(b)[K, N] + beta · c, row-major
// CpuDropoutOps is the CPU's; model/gpu/lora_access.hpp has the CUDA device's.
template <typename F>
class CpuDropoutOps {
 public:
  F* delta(std::size_t n) { return grown(delta_, n); }
  F* u(std::size_t n) { return grown(u_, n); }
  F* du(std::size_t n) { return grown(du_, n); }
  void times_factors(const DropoutMask& mask, const F* v, F* out, std::size_t rows,
                     std::size_t columns, bool add) const;
  void gemm(kernels::Transpose ta, kernels::Transpose tb, std::size_t M, std::size_t N,
            std::size_t K, double alpha, const F* a, std::size_t lda, const F* b, std::size_t ldb,
            double beta, F* c, std::size_t ldc) const {
    kernels::gemm(ta, tb, M, N, K, static_cast<F>(alpha), a, lda, b, ldb, static_cast<F>(beta), c,
                  ldc);
  }
  // Bytes of working memory allocated so far.
  std::size_t bytes() const {
    return (delta_.capacity() + u_.capacity() + du_.capacity()) * sizeof(F);
  }

 private:
  static F* grown(std::vector<F>& buffer, std::size_t n) {
    if (buffer.size() < n) buffer.resize(n);
    return buffer.data();
  }
  std::vector<F> delta_, u_, du_;
};

// y[:, :out] (row stride ldy) += s · (δ · Aᵀ) · Bᵀ for x [N, in].
template <typename F, typename Ops>
void lora_dropout_forward(const DropoutMask& mask, const LoraModule<F>& m, const F* x,
                          std::size_t rows, F* y, std::size_t ldy, Ops& ops) {
  constexpr auto no = kernels::Transpose::no, yes = kernels::Transpose::yes;
  F* delta = ops.delta(rows * m.in);
  F* u = ops.u(rows * m.r);
  ops.times_factors(mask, x, delta, rows, m.in, false);                          // δ = x ⊙ f
  ops.gemm(no, yes, rows, m.r, m.in, 1.0, delta, m.in, m.A, m.in, 0.0, u, m.r);  // u = δ · Aᵀ
  ops.gemm(no, yes, rows, m.out, m.r, m.scale, u, m.r, m.B, m.r, 1.0, y, ldy);   // y += s·u·Bᵀ
}

// The correction's backward given dy[:, :out] (row stride ldy): dA [r, in] and dB [out, r]
// accumulate (+=), and dx [N, in] += its share (the linear wrote the rest). δ and u are
// recomputed from x: the same mask, the same bits as forward had.
template <typename F, typename Ops>
void lora_dropout_backward(const DropoutMask& mask, const LoraModule<F>& m, const F* x, const F* dy,
                           std::size_t ldy, std::size_t rows, F* dx, F* dA, F* dB, Ops& ops) {
  constexpr auto no = kernels::Transpose::no, yes = kernels::Transpose::yes;
  F* delta = ops.delta(rows * m.in);
  F* u = ops.u(rows * m.r);
  F* du = ops.du(rows * m.r);
  ops.times_factors(mask, x, delta, rows, m.in, false);
  ops.gemm(no, yes, rows, m.r, m.in, 1.0, delta, m.in, m.A, m.in, 0.0, u, m.r);
  // dB[out, r] += s · dy[N, out]ᵀ · u[N, r];  du[N, r] = s · dy · B[out, r]
  ops.gemm(yes, no, m.out, m.r, rows, m.scale, dy, ldy, u, m.r, 1.0, dB, m.r);
  ops.gemm(no, no, rows, m.r, m.out, m.scale, dy, ldy, m.B, m.r, 0.0, du, m.r);
  // dA[r, in] += du[N, r]ᵀ · δ[N, in]
  ops.gemm(yes, no, m.r, m.in, rows, 1.0, du, m.r, delta, m.in, 1.0, dA, m.in);
  // dx[N, in] += (du · A[r, in]) ⊙ f; du · A reuses δ's buffer
  ops.gemm(no, no, rows, m.in, m.r, 1.0, du, m.r, m.A, m.in, 0.0, delta, m.in);
  ops.times_factors(mask, delta, dx, rows, m.in, true);
}

}  // namespace autotrain::model
