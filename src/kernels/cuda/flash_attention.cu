// Flash attention (flash_attention.hpp). Tiles: a warp owns 16 rows (WMMA's M); the forward's
// block owns 64 query rows and walks key tiles of 32 up to the diagonal, keeping each row's
// running max m and sum l (online softmax) and its output accumulator O in shared memory. The
// backward runs three kernels: delta = Σ dout·out per row; dK, dV per key tile of 32 (two warps)
// over the query tiles at or below the diagonal; dQ per query tile of 32 over the key tiles up
// to it. Nothing is accumulated with atomics: every output element is written by one thread.
// P and dS are rounded to the element type before their products (as FlashAttention does).
// WMMA wants 32-byte aligned tiles and leading dimensions that are multiples of 16 bytes: the
// shared arrays are aligned, every tile offset is a multiple of 16 elements.
#include <mma.h>

#include "autotrain/kernels/cuda/flash_attention.hpp"
#include "common.cuh"

namespace autotrain::kernels::gpu {
namespace {

namespace wmma = nvcuda::wmma;

constexpr int kTile = 16;     // WMMA's M = N = K
constexpr int kKeys = 32;     // keys per tile
constexpr int kMaxHead = 64;  // head size limit (shared memory stays under 48 KiB)
constexpr int kForwardWarps = 4;
constexpr int kForwardRows = kForwardWarps * kTile;  // query rows per forward block
constexpr int kBackwardWarps = 2;
constexpr int kBackwardRows = kBackwardWarps * kTile;  // keys (dK dV) or queries (dQ) per block

template <typename F>
using FragA = wmma::fragment<wmma::matrix_a, kTile, kTile, kTile, F, wmma::row_major>;
template <typename F>
using FragBRow = wmma::fragment<wmma::matrix_b, kTile, kTile, kTile, F, wmma::row_major>;
template <typename F>
using FragBCol = wmma::fragment<wmma::matrix_b, kTile, kTile, kTile, F, wmma::col_major>;
using FragAcc = wmma::fragment<wmma::accumulator, kTile, kTile, kTile, float>;

struct Shape {
  int T;
  int C;
  int NH;
  int HS;
  float scale;
};

// Row t of part (0 q, 1 k, 2 v) of head h in qkv [B, T, 3C].
template <typename F>
__device__ __forceinline__ const F* qkv_row(const F* qkv, const Shape& s, int b, int t, int h,
                                            int part) {
  return qkv + (static_cast<std::size_t>(b) * s.T + t) * 3 * s.C +
         static_cast<std::size_t>(part) * s.C + static_cast<std::size_t>(h) * s.HS;
}

template <typename F>
__device__ __forceinline__ std::size_t out_at(const Shape& s, int b, int t, int h) {
  return (static_cast<std::size_t>(b) * s.T + t) * s.C + static_cast<std::size_t>(h) * s.HS;
}

// Copies rows [first, first + rows) of a [T, HS] operand into tile [rows, HS]; rows past T are 0.
// 16 bytes per access: HS is a multiple of 16 elements and the launchers check the operands'
// alignment, so every row starts on a 16-byte boundary.
template <typename F, typename Row>
__device__ __forceinline__ void load_tile(F* tile, int first, int rows, const Shape& s, Row row) {
  constexpr int W = kPack<F>;
  const int packs = s.HS / W;
  for (int i = static_cast<int>(threadIdx.x); i < rows * packs; i += static_cast<int>(blockDim.x)) {
    const int r = i / packs;
    const int d = (i - r * packs) * W;
    Packed<F, W> values;
    if (first + r < s.T) {
      values = load_packed<W>(row(first + r) + d);
    } else {
      for (int j = 0; j < W; ++j) values.set(j, 0.0f);
    }
    store_packed(tile + r * s.HS + d, values);
  }
}

// acc[16, 32] (fp32, ld 32) = a[16, HS] · bᵀ where b is [32, HS] row-major (ld HS).
template <typename F>
__device__ void scores_16x32(float* acc, const F* a, const F* b, int HS) {
  for (int n = 0; n < 2; ++n) {
    FragAcc c;
    wmma::fill_fragment(c, 0.0f);
    for (int k = 0; k < HS; k += kTile) {
      FragA<F> fa;
      FragBCol<F> fb;
      wmma::load_matrix_sync(fa, a + k, HS);
      wmma::load_matrix_sync(fb, b + n * kTile * HS + k, HS);
      wmma::mma_sync(c, fa, fb, c);
    }
    wmma::store_matrix_sync(acc + n * kTile, c, kKeys, wmma::mem_row_major);
  }
}

// acc[16, HS] (fp32, ld HS) += p[16, 32] (ld 32) · v[32, HS] (ld HS).
template <typename F>
__device__ void accumulate_16xHS(float* acc, const F* p, const F* v, int HS) {
  for (int n = 0; n < HS; n += kTile) {
    FragAcc c;
    wmma::load_matrix_sync(c, acc + n, HS, wmma::mem_row_major);
    for (int k = 0; k < kKeys; k += kTile) {
      FragA<F> fa;
      FragBRow<F> fb;
      wmma::load_matrix_sync(fa, p + k, kKeys);
      wmma::load_matrix_sync(fb, v + k * HS + n, HS);
      wmma::mma_sync(c, fa, fb, c);
    }
    wmma::store_matrix_sync(acc + n, c, HS, wmma::mem_row_major);
  }
}

// ---- forward -------------------------------------------------------------------------------

// Block (query tile, b·NH + h), 4 warps; lane r < 16 of warp w owns query row q0 + 16w + r.
// Five blocks per SM: the 44 KB of shared memory allow five on an H100/H200, and the launch
// bound keeps the registers (the lanes' partial row sums) within the 102 per thread that five
// need.
template <typename F>
__global__ void __launch_bounds__(kForwardWarps* kWarp, 5)
    flash_forward_kernel(F* out, float* lse, const F* qkv, Shape s) {
  __shared__ __align__(32) F q_tile[kForwardRows * kMaxHead];
  __shared__ __align__(32) F k_tile[kKeys * kMaxHead];
  __shared__ __align__(32) F v_tile[kKeys * kMaxHead];
  __shared__ __align__(32) float scores[kForwardWarps][kTile * kKeys];
  __shared__ __align__(32) F probs[kForwardWarps][kTile * kKeys];
  __shared__ __align__(32) float acc[kForwardWarps][kTile * kMaxHead];
  __shared__ float row_max[kForwardWarps][kTile];  // m: the running maximum of each row
  const int b = static_cast<int>(blockIdx.y) / s.NH;
  const int h = static_cast<int>(blockIdx.y) % s.NH;
  const int q0 = static_cast<int>(blockIdx.x) * kForwardRows;
  const int warp = static_cast<int>(threadIdx.x) / kWarp;
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const int row0 = q0 + warp * kTile;  // this warp's first query row
  load_tile(q_tile, q0, kForwardRows, s, [&](int r) { return qkv_row(qkv, s, b, r, h, 0); });
  float* o = acc[warp];
  for (int i = lane; i < kTile * s.HS; i += kWarp) o[i] = 0.0f;
  if (lane < kTile) row_max[warp][lane] = -INFINITY;
  // l: Σ exp(score - m) of each row so far, this lane's keys only; the lanes' parts are summed
  // once at the end (rescaling by exp(m_old - m_new) distributes over the sum).
  float lane_sum[kTile];
#pragma unroll
  for (float& sum : lane_sum) sum = 0.0f;
  const int last_row = (q0 + kForwardRows < s.T ? q0 + kForwardRows : s.T) - 1;
  for (int k0 = 0; k0 <= last_row; k0 += kKeys) {
    __syncthreads();  // the previous tiles are no longer read
    load_tile(k_tile, k0, kKeys, s, [&](int r) { return qkv_row(qkv, s, b, r, h, 1); });
    load_tile(v_tile, k0, kKeys, s, [&](int r) { return qkv_row(qkv, s, b, r, h, 2); });
    __syncthreads();
    if (k0 > row0 + kTile - 1) continue;  // every key of the tile is above this warp's rows
    scores_16x32(scores[warp], q_tile + warp * kTile * s.HS, k_tile, s.HS);
    __syncwarp();
    // Online softmax, a row at a time with the lanes across its 32 keys (consecutive shared
    // memory words: no bank conflicts), then the row of O rescaled by exp(m_old - m_new).
    const int key = k0 + lane;
#pragma unroll  // lane_sum[r] stays in registers only with r a constant
    for (int r = 0; r < kTile; ++r) {
      const int t = row0 + r;
      const float score =
          key <= t && key < s.T ? scores[warp][r * kKeys + lane] * s.scale : -INFINITY;
      const float m_old = row_max[warp][r];
      const float m_new = fmaxf(m_old, warp_max(score));
      const float p = score == -INFINITY ? 0.0f : expf(score - m_new);
      const float alpha = m_new == -INFINITY ? 1.0f : expf(m_old - m_new);
      probs[warp][r * kKeys + lane] = from_float<F>(p);
      lane_sum[r] = lane_sum[r] * alpha + p;
      // alpha is the same in every lane: the row of O is rescaled only when its maximum grew,
      // which along a causal row gets rarer tile by tile.
      if (alpha != 1.0f) {
        for (int d = lane; d < s.HS; d += kWarp) o[r * s.HS + d] *= alpha;
      }
      if (lane == 0) row_max[warp][r] = m_new;
    }
    __syncwarp();
    accumulate_16xHS(o, probs[warp], v_tile, s.HS);
    __syncwarp();
  }
  __syncwarp();
#pragma unroll
  for (int r = 0; r < kTile; ++r) {
    const float row_sum = warp_sum(lane_sum[r]);  // every lane takes part, rows past T too
    const int t = row0 + r;
    if (t >= s.T) continue;
    const float inv = 1.0f / row_sum;
    F* dst = out + out_at<F>(s, b, t, h);
    for (int d = lane; d < s.HS; d += kWarp) dst[d] = from_float<F>(o[r * s.HS + d] * inv);
    if (lane == 0) {
      lse[(static_cast<std::size_t>(b) * s.NH + h) * s.T + t] = row_max[warp][r] + logf(row_sum);
    }
  }
}

// ---- backward ------------------------------------------------------------------------------

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
  const std::size_t at = out_at<F>(s, b, t, h);
  float sum = 0.0f;
  for (int d = lane; d < s.HS; d += kWarp) sum += to_float(dout[at + d]) * to_float(out[at + d]);
  sum = warp_sum(sum);
  if (lane == 0) delta[row] = sum;
}

// Probability p and score gradient ds = p·(dp - delta) of (row, key) for a masked-aware tile.
__device__ __forceinline__ float probability(float score, int query, int key, const Shape& s,
                                             float row_lse) {
  return key <= query && key < s.T && query < s.T ? expf(score * s.scale - row_lse) : 0.0f;
}

// Block (key tile, b·NH + h), 2 warps; warp w owns keys k0 + 16w .. + 15. For each query tile of
// 32 at or below the diagonal: Sᵀ = K_w·Qᵀ, Pᵀ, dV_w += Pᵀ·dO, dPᵀ = V_w·dOᵀ,
// dSᵀ = Pᵀ∘(dPᵀ - delta), dK_w += dSᵀ·Q; dK is scaled once at the end.
template <typename F>
__global__ void flash_dkdv_kernel(F* dqkv, const F* dout, const F* qkv, const float* lse,
                                  const float* delta, Shape s) {
  __shared__ __align__(32) F k_tile[kBackwardRows * kMaxHead];
  __shared__ __align__(32) F v_tile[kBackwardRows * kMaxHead];
  __shared__ __align__(32) F q_tile[kKeys * kMaxHead];
  __shared__ __align__(32) F do_tile[kKeys * kMaxHead];
  __shared__ __align__(32) float lse_tile[kKeys];
  __shared__ __align__(32) float delta_tile[kKeys];
  __shared__ __align__(32) float scores[kBackwardWarps][kTile * kKeys];
  __shared__ __align__(32) F probs[kBackwardWarps][kTile * kKeys];
  __shared__ __align__(32) float dk_acc[kBackwardWarps][kTile * kMaxHead];
  __shared__ __align__(32) float dv_acc[kBackwardWarps][kTile * kMaxHead];
  const int b = static_cast<int>(blockIdx.y) / s.NH;
  const int h = static_cast<int>(blockIdx.y) % s.NH;
  const int k0 = static_cast<int>(blockIdx.x) * kBackwardRows;
  const int warp = static_cast<int>(threadIdx.x) / kWarp;
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const int key0 = k0 + warp * kTile;
  const std::size_t head_rows = (static_cast<std::size_t>(b) * s.NH + h) * s.T;
  load_tile(k_tile, k0, kBackwardRows, s, [&](int r) { return qkv_row(qkv, s, b, r, h, 1); });
  load_tile(v_tile, k0, kBackwardRows, s, [&](int r) { return qkv_row(qkv, s, b, r, h, 2); });
  for (int i = lane; i < kTile * s.HS; i += kWarp) {
    dk_acc[warp][i] = 0.0f;
    dv_acc[warp][i] = 0.0f;
  }
  const F* k_w = k_tile + warp * kTile * s.HS;
  const F* v_w = v_tile + warp * kTile * s.HS;
  for (int q0 = k0 - k0 % kKeys; q0 < s.T; q0 += kKeys) {
    __syncthreads();
    load_tile(q_tile, q0, kKeys, s, [&](int r) { return qkv_row(qkv, s, b, r, h, 0); });
    load_tile(do_tile, q0, kKeys, s, [&](int r) { return dout + out_at<F>(s, b, r, h); });
    for (int j = static_cast<int>(threadIdx.x); j < kKeys; j += static_cast<int>(blockDim.x)) {
      lse_tile[j] = q0 + j < s.T ? lse[head_rows + q0 + j] : 0.0f;
      delta_tile[j] = q0 + j < s.T ? delta[head_rows + q0 + j] : 0.0f;
    }
    __syncthreads();
    if (q0 + kKeys - 1 < key0) continue;  // every query of the tile is before this warp's keys
    scores_16x32(scores[warp], k_w, q_tile, s.HS);  // Sᵀ[key, query]
    __syncwarp();
    // Row r is key key0 + r, the lanes are its 32 queries (conflict-free shared memory).
    for (int r = 0; r < kTile; ++r) {
      const float p =
          probability(scores[warp][r * kKeys + lane], q0 + lane, key0 + r, s, lse_tile[lane]);
      probs[warp][r * kKeys + lane] = from_float<F>(p);
    }
    __syncwarp();
    accumulate_16xHS(dv_acc[warp], probs[warp], do_tile, s.HS);  // dV += Pᵀ·dO
    scores_16x32(scores[warp], v_w, do_tile, s.HS);              // dPᵀ[key, query] = V·dOᵀ
    __syncwarp();
    for (int r = 0; r < kTile; ++r) {
      const int at = r * kKeys + lane;
      const float p = to_float(probs[warp][at]);
      probs[warp][at] = from_float<F>(p * (scores[warp][at] - delta_tile[lane]));
    }
    __syncwarp();
    accumulate_16xHS(dk_acc[warp], probs[warp], q_tile, s.HS);  // dK += dSᵀ·Q
    __syncwarp();
  }
  for (int r = 0; r < kTile && key0 + r < s.T; ++r) {
    F* dk = dqkv + (static_cast<std::size_t>(b) * s.T + key0 + r) * 3 * s.C + s.C +
            static_cast<std::size_t>(h) * s.HS;
    F* dv = dk + s.C;
    for (int d = lane; d < s.HS; d += kWarp) {
      dk[d] = from_float<F>(dk_acc[warp][r * s.HS + d] * s.scale);
      dv[d] = from_float<F>(dv_acc[warp][r * s.HS + d]);
    }
  }
}

// Block (query tile, b·NH + h), 2 warps; warp w owns queries q0 + 16w .. + 15. For each key tile
// of 32 up to the diagonal: S = Q_w·Kᵀ, P, dP = dO_w·Vᵀ, dS = P∘(dP - delta), dQ_w += dS·K.
template <typename F>
__global__ void flash_dq_kernel(F* dqkv, const F* dout, const F* qkv, const float* lse,
                                const float* delta, Shape s) {
  __shared__ __align__(32) F q_tile[kBackwardRows * kMaxHead];
  __shared__ __align__(32) F do_tile[kBackwardRows * kMaxHead];
  __shared__ __align__(32) F k_tile[kKeys * kMaxHead];
  __shared__ __align__(32) F v_tile[kKeys * kMaxHead];
  __shared__ __align__(32) float scores[kBackwardWarps][kTile * kKeys];
  __shared__ __align__(32) F probs[kBackwardWarps][kTile * kKeys];
  __shared__ __align__(32) float dq_acc[kBackwardWarps][kTile * kMaxHead];
  __shared__ float row_lse[kBackwardWarps][kTile];
  __shared__ float row_delta[kBackwardWarps][kTile];
  const int b = static_cast<int>(blockIdx.y) / s.NH;
  const int h = static_cast<int>(blockIdx.y) % s.NH;
  const int q0 = static_cast<int>(blockIdx.x) * kBackwardRows;
  const int warp = static_cast<int>(threadIdx.x) / kWarp;
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const int row0 = q0 + warp * kTile;
  const std::size_t head_rows = (static_cast<std::size_t>(b) * s.NH + h) * s.T;
  load_tile(q_tile, q0, kBackwardRows, s, [&](int r) { return qkv_row(qkv, s, b, r, h, 0); });
  load_tile(do_tile, q0, kBackwardRows, s, [&](int r) { return dout + out_at<F>(s, b, r, h); });
  for (int i = lane; i < kTile * s.HS; i += kWarp) dq_acc[warp][i] = 0.0f;
  if (lane < kTile) {
    const bool real = row0 + lane < s.T;
    row_lse[warp][lane] = real ? lse[head_rows + row0 + lane] : 0.0f;
    row_delta[warp][lane] = real ? delta[head_rows + row0 + lane] : 0.0f;
  }
  __syncwarp();
  const F* q_w = q_tile + warp * kTile * s.HS;
  const F* do_w = do_tile + warp * kTile * s.HS;
  const int last_row = (q0 + kBackwardRows < s.T ? q0 + kBackwardRows : s.T) - 1;
  for (int k0 = 0; k0 <= last_row; k0 += kKeys) {
    __syncthreads();
    load_tile(k_tile, k0, kKeys, s, [&](int r) { return qkv_row(qkv, s, b, r, h, 1); });
    load_tile(v_tile, k0, kKeys, s, [&](int r) { return qkv_row(qkv, s, b, r, h, 2); });
    __syncthreads();
    if (k0 > row0 + kTile - 1) continue;
    scores_16x32(scores[warp], q_w, k_tile, s.HS);  // S
    __syncwarp();
    // Row r is query row0 + r, the lanes are its 32 keys (conflict-free shared memory).
    for (int r = 0; r < kTile; ++r) {
      const float p =
          probability(scores[warp][r * kKeys + lane], row0 + r, k0 + lane, s, row_lse[warp][r]);
      probs[warp][r * kKeys + lane] = from_float<F>(p);
    }
    __syncwarp();
    scores_16x32(scores[warp], do_w, v_tile, s.HS);  // dP = dO·Vᵀ
    __syncwarp();
    for (int r = 0; r < kTile; ++r) {
      const int at = r * kKeys + lane;
      const float p = to_float(probs[warp][at]);
      probs[warp][at] = from_float<F>(p * (scores[warp][at] - row_delta[warp][r]));
    }
    __syncwarp();
    accumulate_16xHS(dq_acc[warp], probs[warp], k_tile, s.HS);  // dQ += dS·K
    __syncwarp();
  }
  for (int r = 0; r < kTile && row0 + r < s.T; ++r) {
    F* dq = dqkv + (static_cast<std::size_t>(b) * s.T + row0 + r) * 3 * s.C +
            static_cast<std::size_t>(h) * s.HS;
    for (int d = lane; d < s.HS; d += kWarp) {
      dq[d] = from_float<F>(dq_acc[warp][r * s.HS + d] * s.scale);
    }
  }
}

Shape checked_shape(std::size_t element_bytes, int B, int T, int C, int NH) {
  AT_CHECK(B >= 1 && T >= 1 && flash_attention_supports(element_bytes, C, NH),
           "flash attention: needs bf16 or fp16 and a head size C / NH that is a multiple of 16 "
           "up to ",
           kMaxHead, "; got ", element_bytes, "-byte elements, C = ", C, ", NH = ", NH);
  const int HS = C / NH;
  return Shape{T, C, NH, HS, 1.0f / std::sqrt(static_cast<float>(HS))};
}

// The kernels move rows of qkv, out, dout and dqkv 16 bytes at a time.
template <typename... P>
void check_aligned(const P*... pointers) {
  AT_CHECK(all_aligned_16(pointers...),
           "flash attention: qkv, out, dout and dqkv must start on 16-byte boundaries");
}

}  // namespace

bool flash_attention_supports(std::size_t element_bytes, int C, int NH) {
  if (element_bytes != 2 || NH < 1 || C % NH != 0) return false;
  const int HS = C / NH;
  return HS % kTile == 0 && HS <= kMaxHead;
}

template <typename F>
void flash_attention_forward(F* out, float* lse, const F* qkv, int B, int T, int C, int NH,
                             cudaStream_t stream) {
  const Shape s = checked_shape(sizeof(F), B, T, C, NH);
  check_aligned(out, qkv);
  const dim3 grid(ceil_div(static_cast<std::size_t>(T), kForwardRows),
                  static_cast<unsigned>(B * NH));
  flash_forward_kernel<<<grid, kForwardWarps * kWarp, 0, stream>>>(out, lse, qkv, s);
  AT_CUDA_CHECK_LAUNCH();
}

template <typename F>
void flash_attention_backward(F* dqkv, float* delta, const F* dout, const F* qkv, const F* out,
                              const float* lse, int B, int T, int C, int NH, cudaStream_t stream) {
  const Shape s = checked_shape(sizeof(F), B, T, C, NH);
  check_aligned(dqkv, dout, qkv, out);
  const std::size_t rows = static_cast<std::size_t>(B) * NH * T;
  flash_delta_kernel<<<ceil_div(rows, kBlockThreads / kWarp), kBlockThreads, 0, stream>>>(
      delta, dout, out, B, s);
  AT_CUDA_CHECK_LAUNCH();
  const dim3 grid(ceil_div(static_cast<std::size_t>(T), kBackwardRows),
                  static_cast<unsigned>(B * NH));
  flash_dkdv_kernel<<<grid, kBackwardWarps * kWarp, 0, stream>>>(dqkv, dout, qkv, lse, delta, s);
  AT_CUDA_CHECK_LAUNCH();
  flash_dq_kernel<<<grid, kBackwardWarps * kWarp, 0, stream>>>(dqkv, dout, qkv, lse, delta, s);
  AT_CUDA_CHECK_LAUNCH();
}

#define AT_FLASH(F)                                                                   \
  template void flash_attention_forward<F>(F*, float*, const F*, int, int, int, int,  \
                                           cudaStream_t);                             \
  template void flash_attention_backward<F>(F*, float*, const F*, const F*, const F*, \
                                            const float*, int, int, int, int, cudaStream_t);
AT_FLASH(__nv_bfloat16)
AT_FLASH(__half)

}  // namespace autotrain::kernels::gpu
