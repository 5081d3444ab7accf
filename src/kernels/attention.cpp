// Causal multi-head attention forward and backward (the part between the qkv and output
// projections). Work is split over the B·NH (batch, head) pairs: each pair reads and writes only
// its own slices, so threads never share an output and the result does not depend on timing.
// Invariant: dqkv is overwritten (=); it is zeroed here and then accumulated over positions.
#include "autotrain/kernels/attention.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

#include "autotrain/kernels/fast_math.hpp"

namespace autotrain::kernels {

template <typename F>
void attention_forward(F* out, F* att, const F* qkv, int B, int T, int C, int NH) {
  const int HS = C / NH;
  const std::ptrdiff_t C3 = 3 * static_cast<std::ptrdiff_t>(C);
  const F scale = F(1) / std::sqrt(static_cast<F>(HS));
#pragma omp parallel for schedule(static)
  for (int bh = 0; bh < B * NH; ++bh) {
    const int b = bh / NH;
    const int h = bh % NH;
    const F* base = qkv + static_cast<std::ptrdiff_t>(b) * T * C3 + h * HS;  // q of (b, 0, h)
    for (int t = 0; t < T; ++t) {
      const F* q = base + t * C3;
      F* row = att + (static_cast<std::ptrdiff_t>(bh) * T + t) * T;
      F maxv = -std::numeric_limits<F>::infinity();
      for (int t2 = 0; t2 <= t; ++t2) {
        const F* k = base + t2 * C3 + C;
        F dot = 0;
#pragma omp simd reduction(+ : dot)
        for (int i = 0; i < HS; ++i) dot += q[i] * k[i];
        row[t2] = dot * scale;
        maxv = std::max(maxv, row[t2]);
      }
      F sum = 0;
#pragma omp simd reduction(+ : sum)
      for (int t2 = 0; t2 <= t; ++t2) {
        row[t2] = exp_approx(row[t2] - maxv);
        sum += row[t2];
      }
      const F inv = F(1) / sum;
#pragma omp simd
      for (int t2 = 0; t2 <= t; ++t2) row[t2] *= inv;

      F* o = out + (static_cast<std::ptrdiff_t>(b) * T + t) * C + h * HS;
      std::fill(o, o + HS, F(0));
      for (int t2 = 0; t2 <= t; ++t2) {
        const F* v = base + t2 * C3 + 2 * C;
        const F p = row[t2];
#pragma omp simd
        for (int i = 0; i < HS; ++i) o[i] += p * v[i];
      }
    }
  }
}

template <typename F>
void attention_backward(F* dqkv, F* scratch, const F* dout, const F* qkv, const F* att, int B,
                        int T, int C, int NH) {
  const int HS = C / NH;
  const std::ptrdiff_t C3 = 3 * static_cast<std::ptrdiff_t>(C);
  const F scale = F(1) / std::sqrt(static_cast<F>(HS));
#pragma omp parallel for schedule(static)
  for (int bh = 0; bh < B * NH; ++bh) {
    const int b = bh / NH;
    const int h = bh % NH;
    const std::ptrdiff_t first = static_cast<std::ptrdiff_t>(b) * T * C3 + h * HS;
    const F* base = qkv + first;
    F* dbase = dqkv + first;
    for (int t = 0; t < T; ++t) {
      for (int part = 0; part < 3; ++part) std::fill_n(dbase + t * C3 + part * C, HS, F(0));
    }
    F* datt = scratch + static_cast<std::ptrdiff_t>(bh) * T;  // [T] one row of d(att)
    for (int t = 0; t < T; ++t) {
      const F* row = att + (static_cast<std::ptrdiff_t>(bh) * T + t) * T;
      const F* dO = dout + (static_cast<std::ptrdiff_t>(b) * T + t) * C + h * HS;
      // out = Σ att·v  =>  datt[t2] = dO·v[t2];  dv[t2] += att[t2]·dO
      for (int t2 = 0; t2 <= t; ++t2) {
        const F* v = base + t2 * C3 + 2 * C;
        F* dv = dbase + t2 * C3 + 2 * C;
        const F p = row[t2];
        F dot = 0;
#pragma omp simd reduction(+ : dot)
        for (int i = 0; i < HS; ++i) {
          dot += dO[i] * v[i];
          dv[i] += p * dO[i];
        }
        datt[t2] = dot;
      }
      // softmax: dpre[t2] = att[t2]·(datt[t2] - Σ_j att[j]·datt[j])
      F weighted = 0;
#pragma omp simd reduction(+ : weighted)
      for (int t2 = 0; t2 <= t; ++t2) weighted += row[t2] * datt[t2];
      // pre = q·k·scale  =>  dq[t] += dpre·k[t2]·scale;  dk[t2] += dpre·q[t]·scale
      const F* q = base + t * C3;
      F* dq = dbase + t * C3;
      for (int t2 = 0; t2 <= t; ++t2) {
        const F dpre = row[t2] * (datt[t2] - weighted) * scale;
        const F* k = base + t2 * C3 + C;
        F* dk = dbase + t2 * C3 + C;
#pragma omp simd
        for (int i = 0; i < HS; ++i) {
          dq[i] += dpre * k[i];
          dk[i] += dpre * q[i];
        }
      }
    }
  }
}

template void attention_forward<float>(float*, float*, const float*, int, int, int, int);
template void attention_forward<double>(double*, double*, const double*, int, int, int, int);
template void attention_backward<float>(float*, float*, const float*, const float*, const float*,
                                        int, int, int, int);
template void attention_backward<double>(double*, double*, const double*, const double*,
                                         const double*, int, int, int, int);

}  // namespace autotrain::kernels
