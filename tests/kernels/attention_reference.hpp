#pragma once
// The CPU attention as it was before the tiled kernels (src/kernels/attention.cpp): each (batch,
// head) pair's whole [T, T] score matrix through one gemm, the probabilities kept for backward.
// Checked against finite differences and the definition when it was the training kernel; now the
// reference the tiled kernels are compared with at sizes that cross their tiles, and what the GPU
// kernel tests compare the device's probabilities with.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

#include "autotrain/core/error.hpp"
#include "autotrain/kernels/attention.hpp"
#include "autotrain/kernels/fast_math.hpp"
#include "autotrain/kernels/matmul.hpp"

namespace autotrain::kernels::reference {

// Where the heads of one batch row lie in qkv (and dqkv) and in out (and dout).
struct HeadLayout {
  int NH, NKV, HS;
  int group() const { return NH / NKV; }  // query heads per key/value head
  std::size_t row() const { return static_cast<std::size_t>(NH + 2 * NKV) * HS; }  // qkv row
  std::size_t out_row() const { return static_cast<std::size_t>(NH) * HS; }
  std::size_t query(int h) const { return static_cast<std::size_t>(h) * HS; }
  std::size_t key(int kv) const { return static_cast<std::size_t>(NH + kv) * HS; }
  std::size_t value(int kv) const { return static_cast<std::size_t>(NH + NKV + kv) * HS; }
};

inline HeadLayout checked_layout(const char* what, int NH, int NKV, int HS) {
  AT_CHECK(NH > 0 && NKV > 0 && HS > 0 && NH % NKV == 0, what, ": ", NH,
           " query heads must be a positive multiple of the ", NKV, " key/value heads (head size ",
           HS, ")");
  return HeadLayout{NH, NKV, HS};
}

// Scores of one row in place: capped (softcap > 0), then the softmax over the visible columns
// [first, last]; 0 elsewhere in [0, T).
template <typename F>
inline void softmax_row(F* p, int first, int last, int T, const AttentionOptions& options) {
  if (options.softcap > 0) {
    const F cap = static_cast<F>(options.softcap);
    for (int t2 = first; t2 <= last; ++t2) p[t2] = cap * std::tanh(p[t2] / cap);
  }
  F maxv = -std::numeric_limits<F>::infinity();
#pragma omp simd reduction(max : maxv)
  for (int t2 = first; t2 <= last; ++t2) maxv = p[t2] > maxv ? p[t2] : maxv;
  F sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int t2 = first; t2 <= last; ++t2) {
    p[t2] = exp_approx(p[t2] - maxv);
    sum += p[t2];
  }
  const F inv = F(1) / sum;
#pragma omp simd
  for (int t2 = first; t2 <= last; ++t2) p[t2] *= inv;
  std::fill(p, p + first, F(0));         // out of the window: masked
  std::fill(p + last + 1, p + T, F(0));  // the future: masked
}

// out and att [B, NH, T, T] (the softmax probabilities, 0 where not visible).
template <typename F>
inline void attention_forward(F* out, F* att, const F* qkv, int B, int T, int NH, int NKV, int HS,
                              const AttentionOptions& options = {}) {
  const HeadLayout layout = checked_layout("attention_forward", NH, NKV, HS);
  const auto uT = static_cast<std::size_t>(T);
  const auto uHS = static_cast<std::size_t>(HS);
  const std::size_t row = layout.row();
  const std::size_t out_row = layout.out_row();
  const F scale = static_cast<F>(options.scale_for(HS));
#pragma omp parallel for schedule(static)
  for (int bh = 0; bh < B * NH; ++bh) {
    const int b = bh / NH;
    const int h = bh % NH;
    const int kv = h / layout.group();
    const F* rows = qkv + static_cast<std::size_t>(b) * uT * row;
    const F* q = rows + layout.query(h);
    const F* k = rows + layout.key(kv);
    const F* v = rows + layout.value(kv);
    F* scores = att + static_cast<std::size_t>(bh) * uT * uT;  // [T, T]
    // scores = q[T, HS] · k[T, HS]ᵀ · scale
    gemm<F>(Transpose::no, Transpose::yes, uT, uT, uHS, scale, q, row, k, row, F(0), scores, uT);
    for (int t = 0; t < T; ++t) {
      softmax_row(scores + static_cast<std::size_t>(t) * uT, options.first_visible(t), t, T,
                  options);
    }
    // out[T, HS] (row stride NH·HS) = att[T, T] · v[T, HS]
    F* o = out + static_cast<std::size_t>(b) * uT * out_row + layout.query(h);
    gemm<F>(Transpose::no, Transpose::no, uT, uHS, uT, F(1), scores, uT, v, row, F(0), o, out_row);
  }
}

// scratch [B, NH, T, T] (twice that with a soft cap); att from attention_forward.
template <typename F>
inline void attention_backward(F* dqkv, F* scratch, const F* dout, const F* qkv, const F* att,
                               int B, int T, int NH, int NKV, int HS,
                               const AttentionOptions& options = {}) {
  const HeadLayout layout = checked_layout("attention_backward", NH, NKV, HS);
  const int group = layout.group();
  const auto uT = static_cast<std::size_t>(T);
  const auto uHS = static_cast<std::size_t>(HS);
  const std::size_t row = layout.row();
  const std::size_t out_row = layout.out_row();
  const F scale = static_cast<F>(options.scale_for(HS));
  const F cap = static_cast<F>(options.softcap);
  // [T, T] slices of att and scratch of pair (b, h); [T, HS] slices of (d)qkv and dout of batch b.
  auto probs_of = [&](int b, int h) {
    return att + (static_cast<std::size_t>(b) * NH + h) * uT * uT;
  };
  auto dscores_of = [&](int b, int h) {
    return scratch + (static_cast<std::size_t>(b) * NH + h) * uT * uT;
  };
  auto rows_of = [&](int b) { return static_cast<std::size_t>(b) * uT * row; };
  auto dout_of = [&](int b, int h) {
    return dout + static_cast<std::size_t>(b) * uT * out_row + layout.query(h);
  };

  // Query head (b, h): the gradient of its scores (into scratch) and dq.
  auto query_head_backward = [&](int b, int h) {
    const int kv = h / group;
    const F* k = qkv + rows_of(b) + layout.key(kv);
    const F* v = qkv + rows_of(b) + layout.value(kv);
    const F* probs = probs_of(b, h);  // [T, T], 0 above the diagonal
    F* dscores = dscores_of(b, h);
    // out = att · v  =>  datt = dO · vᵀ
    gemm<F>(Transpose::no, Transpose::yes, uT, uT, uHS, F(1), dout_of(b, h), out_row, v, row, F(0),
            dscores, uT);
    // With a softcap, the scores before it (scale · q·kᵀ) into the second half of scratch.
    F* raw = cap > 0 ? dscores + static_cast<std::size_t>(B) * NH * uT * uT : nullptr;
    if (raw) {
      gemm<F>(Transpose::no, Transpose::yes, uT, uT, uHS, scale, qkv + rows_of(b) + layout.query(h),
              row, k, row, F(0), raw, uT);
    }
    // softmax: dpre[t2] = att[t2]·(datt[t2] - Σ_j att[j]·datt[j]), times the cap's derivative
    // 1 - tanh²(raw / cap) and the score scale. Masked entries have att = 0, so their dpre is 0
    // and they add nothing below.
    for (int t = 0; t < T; ++t) {
      const F* p = probs + static_cast<std::size_t>(t) * uT;
      F* d = dscores + static_cast<std::size_t>(t) * uT;
      F weighted = 0;
#pragma omp simd reduction(+ : weighted)
      for (int t2 = 0; t2 <= t; ++t2) weighted += p[t2] * d[t2];
#pragma omp simd
      for (int t2 = 0; t2 <= t; ++t2) d[t2] = p[t2] * (d[t2] - weighted) * scale;
      if (raw) {
        const F* r = raw + static_cast<std::size_t>(t) * uT;
        for (int t2 = 0; t2 <= t; ++t2) {
          const F th = std::tanh(r[t2] / cap);
          d[t2] *= F(1) - th * th;
        }
      }
      std::fill(d + t + 1, d + T, F(0));
    }
    // pre = q · kᵀ  =>  dq = dpre · k
    gemm<F>(Transpose::no, Transpose::no, uT, uHS, uT, F(1), dscores, uT, k, row, F(0),
            dqkv + rows_of(b) + layout.query(h), row);
  };

  // Key/value head (b, kv): dv = Σ_h attᵀ · dO and dk = Σ_h dpreᵀ · q over the group's query
  // heads h, in head order; the first overwrites, the rest add.
  auto key_value_head_backward = [&](int b, int kv) {
    F* dk = dqkv + rows_of(b) + layout.key(kv);
    F* dv = dqkv + rows_of(b) + layout.value(kv);
    for (int h = kv * group; h < (kv + 1) * group; ++h) {
      const F beta = h == kv * group ? F(0) : F(1);
      const F* q = qkv + rows_of(b) + layout.query(h);
      gemm<F>(Transpose::yes, Transpose::no, uT, uHS, uT, F(1), probs_of(b, h), uT, dout_of(b, h),
              out_row, beta, dv, row);
      gemm<F>(Transpose::yes, Transpose::no, uT, uHS, uT, F(1), dscores_of(b, h), uT, q, row, beta,
              dk, row);
    }
  };

  if (group == 1) {
    // Multi-head: one pass per pair, while its score gradient is still in cache.
#pragma omp parallel for schedule(static)
    for (int bh = 0; bh < B * NH; ++bh) {
      query_head_backward(bh / NH, bh % NH);
      key_value_head_backward(bh / NH, bh % NH);
    }
    return;
  }
  // Grouped: two loops in one parallel region. The first loop's implicit barrier guarantees that
  // every score gradient is written before a group reads it.
#pragma omp parallel
  {
#pragma omp for schedule(static)
    for (int bh = 0; bh < B * NH; ++bh) query_head_backward(bh / NH, bh % NH);
#pragma omp for schedule(static)
    for (int bkv = 0; bkv < B * NKV; ++bkv) key_value_head_backward(bkv / NKV, bkv % NKV);
  }
}

// GPT-2's layout: NKV = NH, HS = C / NH.
template <typename F>
inline void attention_forward(F* out, F* att, const F* qkv, int B, int T, int C, int NH) {
  attention_forward(out, att, qkv, B, T, NH, NH, C / NH);
}
template <typename F>
inline void attention_backward(F* dqkv, F* scratch, const F* dout, const F* qkv, const F* att,
                               int B, int T, int C, int NH) {
  attention_backward(dqkv, scratch, dout, qkv, att, B, T, NH, NH, C / NH);
}

}  // namespace autotrain::kernels::reference
