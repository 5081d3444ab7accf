// Causal grouped-query attention forward and backward (the part between the qkv and output
// projections), with AttentionOptions' score scale, soft cap and sliding window, in tiles of
// kRows query rows (or keys) so that no [T, T] matrix is ever stored: forward keeps each row's
// log-sum-exp, backward recomputes the probabilities from it, as flash attention does. A tile's
// products are gemms over the keys its rows see (OpenBLAS runs single-threaded inside our
// parallel loops), so the masked future costs at most one tile's triangle.
//   forward     per (batch, query head, query tile): scores, softmax rows, · v.
//   backward 1  per (batch, query head, query tile): the probabilities and dp = dO · vᵀ again,
//               each row's Σ p · dp (kept in scratch), the score gradient, dq = dS · k.
//   backward 2  per (batch, key/value head, key tile): for each query head of the group in head
//               order, the probabilities and score gradient of every query row that sees the tile,
//               dv += pᵀ · dO, dk += dSᵀ · q.
// Every task writes only its own slices, so threads never share an output and the result does not
// depend on timing. Invariant: dqkv is overwritten (=). Each thread's tile buffers grow once and
// are reused.
#include "autotrain/kernels/attention.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

#include "autotrain/core/error.hpp"
#include "autotrain/kernels/fast_math.hpp"
#include "autotrain/kernels/matmul.hpp"

namespace autotrain::kernels {
namespace {

constexpr int kRows = 64;  // query rows of a forward or backward-1 tile; keys of a backward-2 tile

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

HeadLayout checked_layout(const char* what, int NH, int NKV, int HS) {
  AT_CHECK(NH > 0 && NKV > 0 && HS > 0 && NH % NKV == 0, what, ": ", NH,
           " query heads must be a positive multiple of the ", NKV, " key/value heads (head size ",
           HS, ")");
  return HeadLayout{NH, NKV, HS};
}

// This thread's tile buffers: three of `elements` each, grown once and reused.
template <typename F>
F* thread_tiles(std::size_t elements) {
  thread_local std::vector<F> tiles;
  if (tiles.size() < 3 * elements) tiles.resize(3 * elements);
  return tiles.data();
}

// Scores of one row in place: capped (softcap > 0), then the softmax over the visible columns
// [first, last]; 0 elsewhere in [0, n). Returns the row's log-sum-exp (of the capped scores).
template <typename F>
F softmax_row(F* p, int first, int last, int n, const AttentionOptions& options) {
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
  std::fill(p + last + 1, p + n, F(0));  // the future: masked
  return maxv + std::log(sum);
}

// Backward's probabilities of one row's visible columns [lo, hi]: p[c] from the raw score
// (scale · q·k) in p[c] and the row's lse, as forward computed them. With a soft cap also
// factor[c], the capped score's derivative by the raw one, times the scale (without one, that
// factor is the scale itself and `factor` is not written).
template <typename F>
void row_probabilities(F* p, F* factor, int lo, int hi, F lse, F cap, F scale) {
  if (cap > 0) {
    for (int c = lo; c <= hi; ++c) {
      const F th = std::tanh(p[c] / cap);
      p[c] = exp_approx(cap * th - lse);
      factor[c] = (F(1) - th * th) * scale;
    }
    return;
  }
#pragma omp simd
  for (int c = lo; c <= hi; ++c) p[c] = exp_approx(p[c] - lse);
}

// The softmax's gradient over [lo, hi]: ds = p · (dp − Σ p · dp) · factor, dp given in ds.
template <typename F>
void row_score_gradient(F* ds, const F* p, const F* factor, int lo, int hi, F sum, F cap, F scale) {
  if (cap > 0) {
    for (int c = lo; c <= hi; ++c) ds[c] = p[c] * (ds[c] - sum) * factor[c];
    return;
  }
#pragma omp simd
  for (int c = lo; c <= hi; ++c) ds[c] = p[c] * (ds[c] - sum) * scale;
}

}  // namespace

template <typename F>
void attention_forward(F* out, F* lse, const F* qkv, int B, int T, int NH, int NKV, int HS,
                       const AttentionOptions& options) {
  const HeadLayout layout = checked_layout("attention_forward", NH, NKV, HS);
  const auto uHS = static_cast<std::size_t>(HS);
  const std::size_t row = layout.row();
  const std::size_t out_row = layout.out_row();
  const F scale = static_cast<F>(options.scale_for(HS));
  const int tiles = (T + kRows - 1) / kRows;
#pragma omp parallel for schedule(dynamic)
  for (int task = 0; task < B * NH * tiles; ++task) {
    const int bh = task / tiles, b = bh / NH, h = bh % NH, kv = h / layout.group();
    const int t0 = (task % tiles) * kRows, t1 = std::min(T, t0 + kRows);
    const int first = options.first_visible(t0);  // the first key a row of the tile sees
    const auto rows = static_cast<std::size_t>(t1 - t0),
               cols = static_cast<std::size_t>(t1 - first);
    const F* seq = qkv + static_cast<std::size_t>(b) * T * row;
    F* scores = thread_tiles<F>(static_cast<std::size_t>(kRows) * T);  // [rows, cols]
    // scores = q[t0..t1) · k[first..t1)ᵀ · scale
    gemm<F>(Transpose::no, Transpose::yes, rows, cols, uHS, scale, seq + t0 * row + layout.query(h),
            row, seq + first * row + layout.key(kv), row, F(0), scores, cols);
    for (int t = t0; t < t1; ++t) {
      lse[static_cast<std::size_t>(bh) * T + t] =
          softmax_row(scores + (t - t0) * cols, options.first_visible(t) - first, t - first,
                      static_cast<int>(cols), options);
    }
    // out[t0..t1) = p · v[first..t1)
    gemm<F>(Transpose::no, Transpose::no, rows, uHS, cols, F(1), scores, cols,
            seq + first * row + layout.value(kv), row, F(0),
            out + (static_cast<std::size_t>(b) * T + t0) * out_row + layout.query(h), out_row);
  }
}

template <typename F>
void attention_forward_last(F* out, F* scratch, const F* qkv, int T, int NH, int NKV, int HS,
                            const AttentionOptions& options) {
  const HeadLayout layout = checked_layout("attention_forward_last", NH, NKV, HS);
  const auto uHS = static_cast<std::size_t>(HS);
  const std::size_t row = layout.row();
  const F scale = static_cast<F>(options.scale_for(HS));
  // The rows the last position sees: first..T-1.
  const int first = options.first_visible(T - 1);
  const auto seen = static_cast<std::size_t>(T - first);
  const F* rows = qkv + static_cast<std::size_t>(first) * row;
  for (int h = 0; h < NH; ++h) {
    const int kv = h / layout.group();
    const F* q = qkv + static_cast<std::size_t>(T - 1) * row + layout.query(h);
    const F* k = rows + layout.key(kv);
    const F* v = rows + layout.value(kv);
    // scores[seen] = k[seen, HS] · q · scale, then the softmax of the training kernel's last row.
    gemm<F>(Transpose::no, Transpose::no, seen, 1, uHS, scale, k, row, q, 1, F(0), scratch, 1);
    softmax_row(scratch, 0, int(seen) - 1, int(seen), options);
    // out[HS] = att[seen] · v[seen, HS]
    gemm<F>(Transpose::yes, Transpose::no, uHS, 1, seen, F(1), v, row, scratch, 1, F(0),
            out + layout.query(h), 1);
  }
}

template <typename F>
void attention_backward(F* dqkv, F* scratch, const F* dout, const F* qkv, const F* lse, int B,
                        int T, int NH, int NKV, int HS, const AttentionOptions& options) {
  const HeadLayout layout = checked_layout("attention_backward", NH, NKV, HS);
  const int group = layout.group();
  const auto uHS = static_cast<std::size_t>(HS);
  const auto uT = static_cast<std::size_t>(T);
  const std::size_t row = layout.row();
  const std::size_t out_row = layout.out_row();
  const F scale = static_cast<F>(options.scale_for(HS));
  const F cap = static_cast<F>(options.softcap);
  const int tiles = (T + kRows - 1) / kRows;
  F* const weighted = scratch;  // [B, NH, T]: each row's Σ p · dp
  const std::size_t tile = static_cast<std::size_t>(kRows) * uT;  // elements of a tile buffer

  // Backward 1, query rows [t0, t0 + kRows) of (b, h): dq, and each row's Σ p · dp.
  auto query_tile = [&](int b, int h, int t0) {
    const int kv = h / group, t1 = std::min(T, t0 + kRows);
    const int first = options.first_visible(t0);
    const auto rows = static_cast<std::size_t>(t1 - t0);
    const auto cols = static_cast<std::size_t>(t1 - first);
    const F* seq = qkv + static_cast<std::size_t>(b) * uT * row;
    const std::size_t bh = static_cast<std::size_t>(b) * NH + h;
    F* p = thread_tiles<F>(tile);  // [rows, cols]: raw scores, then probabilities
    F* ds = p + tile;              // [rows, cols]: dp, then the score gradient
    F* factor = ds + tile;         // [cols]: one row's factors (soft cap)
    gemm<F>(Transpose::no, Transpose::yes, rows, cols, uHS, scale, seq + t0 * row + layout.query(h),
            row, seq + first * row + layout.key(kv), row, F(0), p, cols);
    // out = p · v  =>  dp = dO · vᵀ
    gemm<F>(Transpose::no, Transpose::yes, rows, cols, uHS, F(1),
            dout + (static_cast<std::size_t>(b) * uT + t0) * out_row + layout.query(h), out_row,
            seq + first * row + layout.value(kv), row, F(0), ds, cols);
    for (int t = t0; t < t1; ++t) {
      F* pr = p + static_cast<std::size_t>(t - t0) * cols;
      F* dr = ds + static_cast<std::size_t>(t - t0) * cols;
      const int lo = options.first_visible(t) - first, hi = t - first;
      const F row_lse = lse[bh * uT + t];
      row_probabilities(pr, factor, lo, hi, row_lse, cap, scale);
      F sum = 0;
#pragma omp simd reduction(+ : sum)
      for (int c = lo; c <= hi; ++c) sum += pr[c] * dr[c];
      weighted[bh * uT + t] = sum;
      // dS, 0 where not visible, so that it adds nothing to dq.
      row_score_gradient(dr, pr, factor, lo, hi, sum, cap, scale);
      std::fill(dr, dr + lo, F(0));
      std::fill(dr + hi + 1, dr + cols, F(0));
    }
    // scores = scale · q · kᵀ  =>  dq = dS · k (the scale is in dS)
    gemm<F>(Transpose::no, Transpose::no, rows, uHS, cols, F(1), ds, cols,
            seq + first * row + layout.key(kv), row, F(0),
            dqkv + (static_cast<std::size_t>(b) * uT + t0) * row + layout.query(h), row);
  };

  // Backward 2, keys [s0, s0 + kRows) of (b, kv): dv = Σ_h pᵀ · dO and dk = Σ_h dSᵀ · q over the
  // group's query heads h in head order and the query rows that see the tile (the first head
  // overwrites, the rest add).
  auto key_tile = [&](int b, int kv, int s0) {
    const int s1 = std::min(T, s0 + kRows);
    // Row t sees key s where t − window < s <= t: rows [s0, s1 − 1 + window) see the tile.
    const int t_end = options.window > 0 ? std::min(T, s1 - 1 + options.window) : T;
    const auto keys = static_cast<std::size_t>(s1 - s0);
    const auto rows = static_cast<std::size_t>(t_end - s0);
    const F* seq = qkv + static_cast<std::size_t>(b) * uT * row;
    F* dk = dqkv + (static_cast<std::size_t>(b) * uT + s0) * row + layout.key(kv);
    F* dv = dqkv + (static_cast<std::size_t>(b) * uT + s0) * row + layout.value(kv);
    F* p = thread_tiles<F>(tile);  // [rows, keys]
    F* ds = p + tile;              // [rows, keys]
    F* factor = ds + tile;         // [keys]: one row's factors (soft cap)
    for (int h = kv * group; h < (kv + 1) * group; ++h) {
      const F beta = h == kv * group ? F(0) : F(1);
      const std::size_t bh = static_cast<std::size_t>(b) * NH + h;
      const F* q = seq + s0 * row + layout.query(h);
      const F* d_out = dout + (static_cast<std::size_t>(b) * uT + s0) * out_row + layout.query(h);
      gemm<F>(Transpose::no, Transpose::yes, rows, keys, uHS, scale, q, row,
              seq + s0 * row + layout.key(kv), row, F(0), p, keys);
      gemm<F>(Transpose::no, Transpose::yes, rows, keys, uHS, F(1), d_out, out_row,
              seq + s0 * row + layout.value(kv), row, F(0), ds, keys);
      for (int t = s0; t < t_end; ++t) {
        F* pr = p + static_cast<std::size_t>(t - s0) * keys;
        F* dr = ds + static_cast<std::size_t>(t - s0) * keys;
        const int lo = std::max(options.first_visible(t), s0) - s0;
        const int hi = std::min(t, s1 - 1) - s0;  // < lo where the row sees none of the tile
        const F row_lse = lse[bh * uT + t], sum = weighted[bh * uT + t];
        row_probabilities(pr, factor, lo, hi, row_lse, cap, scale);
        row_score_gradient(dr, pr, factor, lo, hi, sum, cap, scale);
        const int end = std::max(lo, hi + 1);
        std::fill(pr, pr + lo, F(0));
        std::fill(dr, dr + lo, F(0));
        std::fill(pr + end, pr + keys, F(0));
        std::fill(dr + end, dr + keys, F(0));
      }
      gemm<F>(Transpose::yes, Transpose::no, keys, uHS, rows, F(1), p, keys, d_out, out_row, beta,
              dv, row);
      gemm<F>(Transpose::yes, Transpose::no, keys, uHS, rows, F(1), ds, keys, q, row, beta, dk,
              row);
    }
  };

  // Two loops in one parallel region: the first loop's implicit barrier guarantees that every
  // row's Σ p · dp is written before a key tile reads it.
#pragma omp parallel
  {
#pragma omp for schedule(dynamic)
    for (int task = 0; task < B * NH * tiles; ++task) {
      query_tile(task / tiles / NH, task / tiles % NH, task % tiles * kRows);
    }
#pragma omp for schedule(dynamic)
    for (int task = 0; task < B * NKV * tiles; ++task) {
      key_tile(task / tiles / NKV, task / tiles % NKV, task % tiles * kRows);
    }
  }
}

template void attention_forward<float>(float*, float*, const float*, int, int, int, int, int,
                                       const AttentionOptions&);
template void attention_forward<double>(double*, double*, const double*, int, int, int, int, int,
                                        const AttentionOptions&);
template void attention_forward_last<float>(float*, float*, const float*, int, int, int, int,
                                            const AttentionOptions&);
template void attention_forward_last<double>(double*, double*, const double*, int, int, int, int,
                                             const AttentionOptions&);
template void attention_backward<float>(float*, float*, const float*, const float*, const float*,
                                        int, int, int, int, int, const AttentionOptions&);
template void attention_backward<double>(double*, double*, const double*, const double*,
                                         const double*, int, int, int, int, int,
                                         const AttentionOptions&);

}  // namespace autotrain::kernels
