// Flash attention backward (flash_attention.hpp; the scheme is at the top of
// flash_attention.cu): delta = Σ dout·out per row, then dK and dV per block of keys of one
// key/value head, then dQ per block of queries. A key/value block walks the query heads of its
// group one after the other and keeps dK, dV in registers across them, so a key/value head's
// gradient sums its group in head order inside one block: deterministic, no atomics.
// Up to head size 64 a block stages its warps' own rows (K and V for dK dV, Q and dout for dQ) in
// shared memory next to the tiles it walks; at 128 those rows would take the shared memory past
// the 48 KB a launch gets without opting in, so each warp reads their A fragments straight from
// global memory (L1) where the products need them.
#include "flash_attention.cuh"

namespace autotrain::kernels::gpu {
namespace {

// delta[b, h, t] = Σ_d dout·out over row t of head h; one warp per row.
template <typename F>
__global__ void flash_delta_kernel(float* delta, const F* dout, const F* out, int B, Shape s) {
  const long long row =
      static_cast<long long>(blockIdx.x) * (kBlockThreads / kWarp) + threadIdx.x / kWarp;
  if (row >= static_cast<long long>(B) * s.NH * s.T) return;
  const int lane = static_cast<int>(threadIdx.x % kWarp);
  const int t = static_cast<int>(row % s.T);
  const int h = static_cast<int>((row / s.T) % s.NH);
  const int b = static_cast<int>(row / (static_cast<long long>(s.T) * s.NH));
  const std::size_t at = out_at(s, b, t, h);
  float sum = 0.0f;
  for (int d = lane; d < s.HS; d += kWarp) sum += to_float(dout[at + d]) * to_float(out[at + d]);
  sum = warp_sum(sum);
  if (lane == 0) delta[row] = sum;
}

// Whether a block stages its warps' own rows in shared memory (see the top of this file), and the
// elements of such a tile (a stand-in where they are not staged).
template <int H>
inline constexpr bool kStagesOwnRows = H <= kMaxSharedHead;
template <int H>
inline constexpr int kOwnRowsTile = kStagesOwnRows<H> ? padded(H) * kBlockRows : 8;

// The A fragments of an operand's rows that warp w owns, as two_products takes them: where
// kStagesOwnRows<H>, the block's rows from `first` are staged in `tile` now (every thread of the
// block calls this) and read from there; else each fragment is read from global memory, row(r).
template <int H, typename F, typename Row>
__device__ __forceinline__ auto own_fragments(F* tile, int first, int T, const WarpRows& w,
                                              Row row) {
  if constexpr (kStagesOwnRows<H>) {
    load_rows<H, kBlockRows>(tile, static_cast<F*>(nullptr), first, T, row);
  }
  return [=](int k, std::uint32_t(&f)[4]) {
    if constexpr (kStagesOwnRows<H>) {
      load_a_fragment(f, tile + w.warp * kWarpRows * padded(H) + 16 * k, padded(H), w.lane);
    } else {
      load_a_fragment_rows(f, k, w.rows, T, w.lane, row);
    }
  };
}

// The softmax statistics of a query row: its log-sum-exp (log2 units) and delta = Σ dout·out.
struct RowStats {
  float lse;
  float delta;
};

// For a warp's 16 x Cols scores S: P = 2^(logit2(S) - lse), rounded to F, in place of S in p, and
// dS = P∘(dP - delta), times the soft cap's derivative where there is one, in place of dP in dp.
// stats(i, col) gives the statistics of the query row of element (rows[i], col). Hidden elements
// are cleared afterwards (clear_hidden).
template <typename F, int Cols, typename Stats>
__device__ __forceinline__ void probabilities_and_gradients(float (&p)[Cols / 8][4],
                                                            float (&dp)[Cols / 8][4],
                                                            const Shape& s, int lane,
                                                            const Stats& stats) {
#pragma unroll
  for (int j = 0; j < Cols / 8; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const RowStats row = stats(e / 2, 8 * j + fragment_col(lane, e));
      float d_capped;
      const float logit = s.logit2(p[j][e], d_capped);
      p[j][e] = rounded<F>(exp2f(logit - row.lse));
      dp[j][e] = p[j][e] * (dp[j][e] - row.delta);
      if (s.cap != 0.0f) dp[j][e] *= d_capped;
    }
  }
}

// Block (key tile, b·NKV + kv, column part), 4 warps; warp w owns keys k0 + 16w .. + 15
// (warp_rows). For each query head h of the group and each of its query tiles of Cols that see
// some of the block's keys (at or below the diagonal, within the window): Sᵀ = K_w·Qᵀ, Pᵀ,
// dV_w += Pᵀ·dO, dPᵀ = V_w·dOᵀ, dSᵀ = Pᵀ∘(dPᵀ - delta), dK_w += dSᵀ·Q, for the block's part of
// dK's and dV's columns (all of them up to head size 128); dK is scaled once at the end. The first
// key tiles see the most queries and start first.
template <typename F, int H>
__global__ void __launch_bounds__(kWarps* kWarp)
    flash_dkdv_kernel(F* dqkv, const F* dout, const F* qkv, const float* lse, const float* delta,
                      Shape s) {
  constexpr int Cols = kBackwardCols<H>;
  constexpr int Part = H / kColumnParts<H>;  // the columns of dK and dV this block writes
  __shared__ __align__(16) F k_tile[kOwnRowsTile<H>];
  __shared__ __align__(16) F v_tile[kOwnRowsTile<H>];
  __shared__ __align__(16) F q_tile[Cols * padded(H)];
  __shared__ __align__(16) F q_cols[Part * padded(Cols)];
  __shared__ __align__(16) F do_tile[Cols * padded(H)];
  __shared__ __align__(16) F do_cols[Part * padded(Cols)];
  __shared__ RowStats stats_tile[Cols];  // the tile's query rows
  const int b = static_cast<int>(blockIdx.y) / s.NKV;
  const int kv = static_cast<int>(blockIdx.y) % s.NKV;
  const int k0 = static_cast<int>(blockIdx.x) * kBlockRows;
  const int c0 = static_cast<int>(blockIdx.z) * Part;
  const WarpRows w = warp_rows(k0);  // rows are keys here
  const auto k_row = [&](int r) { return key_row(qkv, s, b, r, kv); };
  const auto v_row = [&](int r) { return value_row(qkv, s, b, r, kv); };
  const auto k_fragment = own_fragments<H>(k_tile, k0, s.T, w, k_row);
  const auto v_fragment = own_fragments<H>(v_tile, k0, s.T, w, v_row);
  const int q_end = s.queries_seeing(k0 + kBlockRows);
  float dk[Part / 8][4] = {};
  float dv[Part / 8][4] = {};
  for (int h = kv * s.group; h < (kv + 1) * s.group; ++h) {
    const std::size_t head_rows = (static_cast<std::size_t>(b) * s.NH + h) * s.T;
    for (int q0 = k0; q0 < q_end; q0 += Cols) {
      __syncthreads();  // the previous tiles are no longer read (and k, v are loaded)
      load_rows<H, Cols, Part>(
          q_tile, q_cols, q0, s.T, [&](int r) { return query_row(qkv, s, b, r, h); }, c0);
      load_rows<H, Cols, Part>(
          do_tile, do_cols, q0, s.T, [&](int r) { return dout + out_at(s, b, r, h); }, c0);
      for (int j = static_cast<int>(threadIdx.x); j < Cols; j += static_cast<int>(blockDim.x)) {
        const bool real = q0 + j < s.T;
        stats_tile[j] = RowStats{real ? lse[head_rows + q0 + j] * kLog2e : 0.0f,
                                 real ? delta[head_rows + q0 + j] : 0.0f};
      }
      __syncthreads();
      // Every query of the tile is before the warp's keys, or after their windows.
      if (q0 + Cols - 1 < w.first || !s.in_window(q0, w.last())) continue;
      float p[Cols / 8][4] = {};   // Sᵀ = K_w·Qᵀ, then Pᵀ: keys x queries
      float dp[Cols / 8][4] = {};  // dPᵀ = V_w·dOᵀ, then dSᵀ
      two_products<F, H, Cols>(p, k_fragment, q_tile, dp, v_fragment, do_tile, w.lane);
      probabilities_and_gradients<F, Cols>(p, dp, s, w.lane,
                                           [&](int, int col) { return stats_tile[col]; });
      // Queries before a key or past T, or after its window, are cleared on the tiles that have
      // them.
      if (q0 < w.last() || q0 + Cols > s.T) {
        clear_hidden<Cols>(p, dp, q0, w,
                           [&](int key, int query) { return query < key || query >= s.T; });
      }
      if (!s.in_window(q0 + Cols - 1, w.first)) {
        clear_hidden<Cols>(p, dp, q0, w,
                           [&](int key, int query) { return !s.in_window(query, key); });
      }
      // dV += Pᵀ·dO and dK += dSᵀ·Q, B fragments from the transposed tiles.
      accumulate_product<F, Part, Cols>(dv, p, do_cols, w.lane);
      accumulate_product<F, Part, Cols>(dk, dp, q_cols, w.lane);
    }
  }
  store_rows<F, Part>(dk, w.rows, s.T, s.scale, s.scale, w.lane,
                      [&](int row) { return key_row(dqkv, s, b, row, kv) + c0; });
  store_rows<F, Part>(dv, w.rows, s.T, 1.0f, 1.0f, w.lane,
                      [&](int row) { return value_row(dqkv, s, b, row, kv) + c0; });
}

// Block (query tile, b·NH + h), 4 warps; warp w owns queries q0 + 16w .. + 15 (query_block,
// warp_rows). For each key tile of Cols of the key/value head from the first the block's first
// row sees up to the diagonal: S = Q_w·Kᵀ, P, dP = dO_w·Vᵀ, dS = P∘(dP - delta), dQ_w += dS·K.
template <typename F, int H>
__global__ void __launch_bounds__(kWarps* kWarp)
    flash_dq_kernel(F* dqkv, const F* dout, const F* qkv, const float* lse, const float* delta,
                    Shape s) {
  constexpr int Cols = kBackwardCols<H>;
  __shared__ __align__(16) F q_tile[kOwnRowsTile<H>];
  __shared__ __align__(16) F do_tile[kOwnRowsTile<H>];
  __shared__ __align__(16) F k_tile[Cols * padded(H)];
  __shared__ __align__(16) F k_cols[H * padded(Cols)];
  __shared__ __align__(16) F v_tile[Cols * padded(H)];
  const QueryBlock q = query_block(s);
  const WarpRows w = warp_rows(q.first);
  const std::size_t head_rows = (static_cast<std::size_t>(q.b) * s.NH + q.h) * s.T;
  RowStats row_stats[2];
  for (int i = 0; i < 2; ++i) {
    const bool real = w.rows[i] < s.T;
    row_stats[i] = RowStats{real ? lse[head_rows + w.rows[i]] * kLog2e : 0.0f,
                            real ? delta[head_rows + w.rows[i]] : 0.0f};
  }
  const auto q_row = [&](int r) { return query_row(qkv, s, q.b, r, q.h); };
  const auto do_row = [&](int r) { return dout + out_at(s, q.b, r, q.h); };
  const auto q_fragment = own_fragments<H>(q_tile, q.first, s.T, w, q_row);
  const auto do_fragment = own_fragments<H>(do_tile, q.first, s.T, w, do_row);
  const int first_seen = s.first_visible(w.first);  // by the warp's first row; its last row's:
  const int last_first_seen = s.first_visible(w.last());
  float dq[H / 8][4] = {};
  for (int k0 = s.first_visible(q.first) / Cols * Cols; k0 <= q.last; k0 += Cols) {
    __syncthreads();  // the previous tiles are no longer read (and q, dout are loaded)
    load_rows<H, Cols>(k_tile, k_cols, k0, s.T,
                       [&](int r) { return key_row(qkv, s, q.b, r, q.kv); });
    load_rows<H, Cols>(v_tile, static_cast<F*>(nullptr), k0, s.T,
                       [&](int r) { return value_row(qkv, s, q.b, r, q.kv); });
    __syncthreads();
    // Every key of the tile is after this warp's rows, or before their windows.
    if (k0 > w.last() || k0 + Cols - 1 < first_seen) continue;
    float p[Cols / 8][4] = {};   // S = Q_w·Kᵀ, then P
    float ds[Cols / 8][4] = {};  // dP = dO_w·Vᵀ, then dS
    two_products<F, H, Cols>(p, q_fragment, k_tile, ds, do_fragment, v_tile, w.lane);
    probabilities_and_gradients<F, Cols>(p, ds, s, w.lane,
                                         [&](int i, int) { return row_stats[i]; });
    // Keys after a row, rows past T, and keys before a row's window are cleared on the tiles
    // that have them.
    if (k0 + Cols - 1 > w.first || w.first + kWarpRows > s.T) {
      clear_hidden<Cols>(p, ds, k0, w, [&](int row, int key) { return key > row || row >= s.T; });
    }
    if (k0 < last_first_seen) {
      clear_hidden<Cols>(p, ds, k0, w, [&](int row, int key) { return !s.in_window(row, key); });
    }
    accumulate_product<F, H, Cols>(dq, ds, k_cols, w.lane);  // dQ += dS·K
  }
  store_rows<F, H>(dq, w.rows, s.T, s.scale, s.scale, w.lane,
                   [&](int row) { return query_row(dqkv, s, q.b, row, q.h); });
}

}  // namespace

template <typename F>
void flash_attention_backward(F* dqkv, float* delta, const F* dout, const F* qkv, const F* out,
                              const float* lse, int B, int T, int NH, int NKV, int HS,
                              cudaStream_t stream, const AttentionOptions& options) {
  const Shape s = checked_shape(sizeof(F), B, T, NH, NKV, HS, options);
  check_aligned(dqkv, dout, qkv, out);
  const std::size_t rows = static_cast<std::size_t>(B) * NH * T;
  flash_delta_kernel<<<ceil_div(rows, kBlockThreads / kWarp), kBlockThreads, 0, stream>>>(
      delta, dout, out, B, s);
  AT_CUDA_CHECK_LAUNCH();
  const unsigned tiles = ceil_div(static_cast<std::size_t>(T), kBlockRows);
  with_head_size(HS, [&](auto head) {
    constexpr int H = decltype(head)::value;
    flash_dkdv_kernel<F, H><<<dim3(tiles, static_cast<unsigned>(B * NKV), kColumnParts<H>),
                              kWarps * kWarp, 0, stream>>>(dqkv, dout, qkv, lse, delta, s);
  });
  AT_CUDA_CHECK_LAUNCH();
  with_head_size(HS, [&](auto head) {
    flash_dq_kernel<F, decltype(head)::value>
        <<<dim3(tiles, static_cast<unsigned>(B * NH)), kWarps * kWarp, 0, stream>>>(dqkv, dout, qkv,
                                                                                    lse, delta, s);
  });
  AT_CUDA_CHECK_LAUNCH();
}

template <typename F>
void flash_attention_backward(F* dqkv, float* delta, const F* dout, const F* qkv, const F* out,
                              const float* lse, int B, int T, int C, int NH, cudaStream_t stream) {
  check_embedding(C, NH);
  flash_attention_backward(dqkv, delta, dout, qkv, out, lse, B, T, NH, NH, C / NH, stream, {});
}

#define AT_FLASH_BACKWARD(F)                                                                     \
  template void flash_attention_backward<F>(F*, float*, const F*, const F*, const F*,            \
                                            const float*, int, int, int, int, int, cudaStream_t, \
                                            const AttentionOptions&);                            \
  template void flash_attention_backward<F>(F*, float*, const F*, const F*, const F*,            \
                                            const float*, int, int, int, int, cudaStream_t);
AT_FLASH_BACKWARD(__nv_bfloat16)
AT_FLASH_BACKWARD(__half)

}  // namespace autotrain::kernels::gpu
