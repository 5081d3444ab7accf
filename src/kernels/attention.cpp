// Causal multi-head attention forward and backward (the part between the qkv and output
// projections). Work is split over the B·NH (batch, head) pairs: each pair reads and writes only
// its own slices, so threads never share an output and the result does not depend on timing.
// Inside a pair every product is one gemm over the whole [T, T] score matrix (OpenBLAS runs
// single-threaded inside our parallel loop): the causal half that a gemm computes for nothing
// costs less than dot products of HS = 64 floats at a time, which run at a fraction of the FMA
// rate. The masked half of att is stored as 0, so it drops out of every product.
// Invariant: dqkv is overwritten (=).
#include "autotrain/kernels/attention.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

#include "autotrain/kernels/fast_math.hpp"
#include "autotrain/kernels/matmul.hpp"

namespace autotrain::kernels {

template <typename F>
void attention_forward(F* out, F* att, const F* qkv, int B, int T, int C, int NH) {
  const int HS = C / NH;
  const auto uT = static_cast<std::size_t>(T);
  const auto uHS = static_cast<std::size_t>(HS);
  const auto C3 = 3 * static_cast<std::size_t>(C);
  const F scale = F(1) / std::sqrt(static_cast<F>(HS));
#pragma omp parallel for schedule(static)
  for (int bh = 0; bh < B * NH; ++bh) {
    const int b = bh / NH;
    const int h = bh % NH;
    const F* q = qkv + static_cast<std::size_t>(b) * uT * C3 + static_cast<std::size_t>(h) * uHS;
    const F* k = q + C;
    const F* v = q + 2 * static_cast<std::size_t>(C);
    F* scores = att + static_cast<std::size_t>(bh) * uT * uT;  // [T, T]
    // scores = q[T, HS] · k[T, HS]ᵀ · scale
    gemm<F>(Transpose::no, Transpose::yes, uT, uT, uHS, scale, q, C3, k, C3, F(0), scores, uT);
    for (int t = 0; t < T; ++t) {
      F* row = scores + static_cast<std::size_t>(t) * uT;
      F maxv = -std::numeric_limits<F>::infinity();
#pragma omp simd reduction(max : maxv)
      for (int t2 = 0; t2 <= t; ++t2) maxv = row[t2] > maxv ? row[t2] : maxv;
      F sum = 0;
#pragma omp simd reduction(+ : sum)
      for (int t2 = 0; t2 <= t; ++t2) {
        row[t2] = exp_approx(row[t2] - maxv);
        sum += row[t2];
      }
      const F inv = F(1) / sum;
#pragma omp simd
      for (int t2 = 0; t2 <= t; ++t2) row[t2] *= inv;
      std::fill(row + t + 1, row + T, F(0));  // the future: masked
    }
    // out[T, HS] (row stride C) = att[T, T] · v[T, HS]
    F* o = out + static_cast<std::size_t>(b) * uT * C + static_cast<std::size_t>(h) * uHS;
    gemm<F>(Transpose::no, Transpose::no, uT, uHS, uT, F(1), scores, uT, v, C3, F(0), o,
            static_cast<std::size_t>(C));
  }
}

template <typename F>
void attention_forward_last(F* out, F* scratch, const F* qkv, int T, int C, int NH) {
  const int HS = C / NH;
  const auto uT = static_cast<std::size_t>(T);
  const auto uHS = static_cast<std::size_t>(HS);
  const auto C3 = 3 * static_cast<std::size_t>(C);
  const F scale = F(1) / std::sqrt(static_cast<F>(HS));
  for (int h = 0; h < NH; ++h) {
    const F* q = qkv + (uT - 1) * C3 + static_cast<std::size_t>(h) * uHS;
    const F* k = qkv + static_cast<std::size_t>(C) + static_cast<std::size_t>(h) * uHS;
    const F* v = k + C;
    // scores[T] = k[T, HS] · q · scale, then the softmax of the training kernel's last row.
    gemm<F>(Transpose::no, Transpose::no, uT, 1, uHS, scale, k, C3, q, 1, F(0), scratch, 1);
    F maxv = -std::numeric_limits<F>::infinity();
    for (int t2 = 0; t2 < T; ++t2) maxv = scratch[t2] > maxv ? scratch[t2] : maxv;
    F sum = 0;
    for (int t2 = 0; t2 < T; ++t2) {
      scratch[t2] = exp_approx(scratch[t2] - maxv);
      sum += scratch[t2];
    }
    const F inv = F(1) / sum;
    for (int t2 = 0; t2 < T; ++t2) scratch[t2] *= inv;
    // out[HS] = att[T] · v[T, HS]
    gemm<F>(Transpose::yes, Transpose::no, uHS, 1, uT, F(1), v, C3, scratch, 1, F(0),
            out + static_cast<std::size_t>(h) * uHS, 1);
  }
}

template <typename F>
void attention_backward(F* dqkv, F* scratch, const F* dout, const F* qkv, const F* att, int B,
                        int T, int C, int NH) {
  const int HS = C / NH;
  const auto uT = static_cast<std::size_t>(T);
  const auto uHS = static_cast<std::size_t>(HS);
  const auto uC = static_cast<std::size_t>(C);
  const auto C3 = 3 * uC;
  const F scale = F(1) / std::sqrt(static_cast<F>(HS));
#pragma omp parallel for schedule(static)
  for (int bh = 0; bh < B * NH; ++bh) {
    const int b = bh / NH;
    const int h = bh % NH;
    const std::size_t first =
        static_cast<std::size_t>(b) * uT * C3 + static_cast<std::size_t>(h) * uHS;
    const F* q = qkv + first;
    const F* k = q + uC;
    const F* v = q + 2 * uC;
    F* dq = dqkv + first;
    F* dk = dq + uC;
    F* dv = dq + 2 * uC;
    const F* probs = att + static_cast<std::size_t>(bh) * uT * uT;  // [T, T], 0 above the diagonal
    F* dscores = scratch + static_cast<std::size_t>(bh) * uT * uT;  // [T, T]
    const F* dO = dout + static_cast<std::size_t>(b) * uT * uC + static_cast<std::size_t>(h) * uHS;
    // out = att · v  =>  dv = attᵀ · dO;  datt = dO · vᵀ
    gemm<F>(Transpose::yes, Transpose::no, uT, uHS, uT, F(1), probs, uT, dO, uC, F(0), dv, C3);
    gemm<F>(Transpose::no, Transpose::yes, uT, uT, uHS, F(1), dO, uC, v, C3, F(0), dscores, uT);
    // softmax: dpre[t2] = att[t2]·(datt[t2] - Σ_j att[j]·datt[j]), times the score scale. Masked
    // entries have att = 0, so their dpre is 0 and they add nothing below.
    for (int t = 0; t < T; ++t) {
      const F* p = probs + static_cast<std::size_t>(t) * uT;
      F* d = dscores + static_cast<std::size_t>(t) * uT;
      F weighted = 0;
#pragma omp simd reduction(+ : weighted)
      for (int t2 = 0; t2 <= t; ++t2) weighted += p[t2] * d[t2];
#pragma omp simd
      for (int t2 = 0; t2 <= t; ++t2) d[t2] = p[t2] * (d[t2] - weighted) * scale;
      std::fill(d + t + 1, d + T, F(0));
    }
    // pre = q · kᵀ  =>  dq = dpre · k;  dk = dpreᵀ · q
    gemm<F>(Transpose::no, Transpose::no, uT, uHS, uT, F(1), dscores, uT, k, C3, F(0), dq, C3);
    gemm<F>(Transpose::yes, Transpose::no, uT, uHS, uT, F(1), dscores, uT, q, C3, F(0), dk, C3);
  }
}

template void attention_forward<float>(float*, float*, const float*, int, int, int, int);
template void attention_forward<double>(double*, double*, const double*, int, int, int, int);
template void attention_forward_last<float>(float*, float*, const float*, int, int, int);
template void attention_forward_last<double>(double*, double*, const double*, int, int, int);
template void attention_backward<float>(float*, float*, const float*, const float*, const float*,
                                        int, int, int, int);
template void attention_backward<double>(double*, double*, const double*, const double*,
                                         const double*, int, int, int, int);

}  // namespace autotrain::kernels
