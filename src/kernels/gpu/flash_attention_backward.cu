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

// Whether a block stages its warps' own rows in shared memory (see the top of this file).
template <int H>
inline constexpr bool kStagesOwnRows = H <= kMaxSharedHead;

// Block (key tile, b·NKV + kv), 4 warps; warp w owns keys k0 + 16w .. + 15 (lane l: keys
// + l/4 and + l/4 + 8). For each query head h of the group and each of its query tiles of 32 at
// or below the diagonal: Sᵀ = K_w·Qᵀ, Pᵀ, dV_w += Pᵀ·dO, dPᵀ = V_w·dOᵀ, dSᵀ = Pᵀ∘(dPᵀ - delta),
// dK_w += dSᵀ·Q; dK is scaled once at the end. The first key tiles see the most queries and
// start first.
template <typename F, int H>
__global__ void __launch_bounds__(kWarps* kWarp)
    flash_dkdv_kernel(F* dqkv, const F* dout, const F* qkv, const float* lse, const float* delta,
                      Shape s) {
  constexpr bool kStaged = kStagesOwnRows<H>;
  __shared__ __align__(16) F k_tile[kStaged ? kBlockRows * padded(H) : 8];
  __shared__ __align__(16) F v_tile[kStaged ? kBlockRows * padded(H) : 8];
  __shared__ __align__(16) F q_tile[kBackwardCols * padded(H)];
  __shared__ __align__(16) F q_cols[H * padded(kBackwardCols)];
  __shared__ __align__(16) F do_tile[kBackwardCols * padded(H)];
  __shared__ __align__(16) F do_cols[H * padded(kBackwardCols)];
  __shared__ float lse_tile[kBackwardCols];  // log2 units
  __shared__ float delta_tile[kBackwardCols];
  const int b = static_cast<int>(blockIdx.y) / s.NKV;
  const int kv = static_cast<int>(blockIdx.y) % s.NKV;
  const int k0 = static_cast<int>(blockIdx.x) * kBlockRows;
  const int warp = static_cast<int>(threadIdx.x) / kWarp;
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const int key0 = k0 + warp * kWarpRows;
  const int keys[2] = {key0 + lane / 4, key0 + lane / 4 + 8};
  const float scale = s.scale * kLog2e;
  if constexpr (kStaged) {
    load_rows<H, kBlockRows>(k_tile, static_cast<F*>(nullptr), k0, s.T,
                             [&](int r) { return key_row(qkv, s, b, r, kv); });
    load_rows<H, kBlockRows>(v_tile, static_cast<F*>(nullptr), k0, s.T,
                             [&](int r) { return value_row(qkv, s, b, r, kv); });
  }
  const auto k_fragment = [&](int k, std::uint32_t(&f)[4]) {
    if constexpr (kStaged) {
      load_a_fragment(f, k_tile + warp * kWarpRows * padded(H) + 16 * k, padded(H), lane);
    } else {
      load_a_fragment_rows(f, k, keys, s.T, lane, [&](int r) { return key_row(qkv, s, b, r, kv); });
    }
  };
  const auto v_fragment = [&](int k, std::uint32_t(&f)[4]) {
    if constexpr (kStaged) {
      load_a_fragment(f, v_tile + warp * kWarpRows * padded(H) + 16 * k, padded(H), lane);
    } else {
      load_a_fragment_rows(f, k, keys, s.T, lane,
                           [&](int r) { return value_row(qkv, s, b, r, kv); });
    }
  };
  float dk[H / 8][4] = {};
  float dv[H / 8][4] = {};
  for (int h = kv * s.group; h < (kv + 1) * s.group; ++h) {
    const std::size_t head_rows = (static_cast<std::size_t>(b) * s.NH + h) * s.T;
    for (int q0 = k0; q0 < s.T; q0 += kBackwardCols) {
      __syncthreads();  // the previous tiles are no longer read (and k, v are loaded)
      load_rows<H, kBackwardCols>(q_tile, q_cols, q0, s.T,
                                  [&](int r) { return query_row(qkv, s, b, r, h); });
      load_rows<H, kBackwardCols>(do_tile, do_cols, q0, s.T,
                                  [&](int r) { return dout + out_at(s, b, r, h); });
      for (int j = static_cast<int>(threadIdx.x); j < kBackwardCols;
           j += static_cast<int>(blockDim.x)) {
        lse_tile[j] = q0 + j < s.T ? lse[head_rows + q0 + j] * kLog2e : 0.0f;
        delta_tile[j] = q0 + j < s.T ? delta[head_rows + q0 + j] : 0.0f;
      }
      __syncthreads();
      if (q0 + kBackwardCols - 1 < key0) continue;  // every query of the tile is before the keys
      float p[kBackwardCols / 8][4] = {};           // Sᵀ = K_w·Qᵀ, then Pᵀ: keys x queries
      float dp[kBackwardCols / 8][4] = {};          // dPᵀ = V_w·dOᵀ, then dSᵀ
      two_products<F, H>(p, k_fragment, q_tile, dp, v_fragment, do_tile, lane);
      // Queries before a key, or past T, are masked (-inf: P = 0) on the tiles that have them.
      if (q0 < key0 + kWarpRows - 1 || q0 + kBackwardCols > s.T) {
#pragma unroll
        for (int j = 0; j < kBackwardCols / 8; ++j) {
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int query = q0 + 8 * j + fragment_col(lane, e);
            if (query < keys[e / 2] || query >= s.T) p[j][e] = -INFINITY;
          }
        }
      }
#pragma unroll
      for (int j = 0; j < kBackwardCols / 8; ++j) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int col = 8 * j + fragment_col(lane, e);
          p[j][e] = rounded<F>(exp2f(p[j][e] * scale - lse_tile[col]));
          dp[j][e] = p[j][e] * (dp[j][e] - delta_tile[col]);
        }
      }
      // dV += Pᵀ·dO and dK += dSᵀ·Q, B fragments from the transposed tiles.
      accumulate_product<F, H, kBackwardCols>(dv, p, do_cols, lane);
      accumulate_product<F, H, kBackwardCols>(dk, dp, q_cols, lane);
    }
  }
  store_rows<F, H>(dk, keys, s.T, s.scale, s.scale, lane,
                   [&](int key) { return key_row(dqkv, s, b, key, kv); });
  store_rows<F, H>(dv, keys, s.T, 1.0f, 1.0f, lane,
                   [&](int key) { return value_row(dqkv, s, b, key, kv); });
}

// Block (query tile, b·NH + h), 4 warps; warp w owns queries q0 + 16w .. + 15. For each key tile
// of 32 of the key/value head up to the diagonal: S = Q_w·Kᵀ, P, dP = dO_w·Vᵀ,
// dS = P∘(dP - delta), dQ_w += dS·K. Query tiles are taken last first, as in the forward.
template <typename F, int H>
__global__ void __launch_bounds__(kWarps* kWarp)
    flash_dq_kernel(F* dqkv, const F* dout, const F* qkv, const float* lse, const float* delta,
                    Shape s) {
  constexpr bool kStaged = kStagesOwnRows<H>;
  __shared__ __align__(16) F q_tile[kStaged ? kBlockRows * padded(H) : 8];
  __shared__ __align__(16) F do_tile[kStaged ? kBlockRows * padded(H) : 8];
  __shared__ __align__(16) F k_tile[kBackwardCols * padded(H)];
  __shared__ __align__(16) F k_cols[H * padded(kBackwardCols)];
  __shared__ __align__(16) F v_tile[kBackwardCols * padded(H)];
  const int b = static_cast<int>(blockIdx.y) / s.NH;
  const int h = static_cast<int>(blockIdx.y) % s.NH;
  const int kv = h / s.group;
  const int q0 = static_cast<int>(gridDim.x - 1 - blockIdx.x) * kBlockRows;
  const int warp = static_cast<int>(threadIdx.x) / kWarp;
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const int row0 = q0 + warp * kWarpRows;
  const int rows[2] = {row0 + lane / 4, row0 + lane / 4 + 8};
  const std::size_t head_rows = (static_cast<std::size_t>(b) * s.NH + h) * s.T;
  const float scale = s.scale * kLog2e;
  float row_lse[2];
  float row_delta[2];
  for (int i = 0; i < 2; ++i) {
    const bool real = rows[i] < s.T;
    row_lse[i] = real ? lse[head_rows + rows[i]] * kLog2e : 0.0f;
    row_delta[i] = real ? delta[head_rows + rows[i]] : 0.0f;
  }
  if constexpr (kStaged) {
    load_rows<H, kBlockRows>(q_tile, static_cast<F*>(nullptr), q0, s.T,
                             [&](int r) { return query_row(qkv, s, b, r, h); });
    load_rows<H, kBlockRows>(do_tile, static_cast<F*>(nullptr), q0, s.T,
                             [&](int r) { return dout + out_at(s, b, r, h); });
  }
  const auto q_fragment = [&](int k, std::uint32_t(&f)[4]) {
    if constexpr (kStaged) {
      load_a_fragment(f, q_tile + warp * kWarpRows * padded(H) + 16 * k, padded(H), lane);
    } else {
      load_a_fragment_rows(f, k, rows, s.T, lane,
                           [&](int r) { return query_row(qkv, s, b, r, h); });
    }
  };
  const auto do_fragment = [&](int k, std::uint32_t(&f)[4]) {
    if constexpr (kStaged) {
      load_a_fragment(f, do_tile + warp * kWarpRows * padded(H) + 16 * k, padded(H), lane);
    } else {
      load_a_fragment_rows(f, k, rows, s.T, lane, [&](int r) { return dout + out_at(s, b, r, h); });
    }
  };
  float dq[H / 8][4] = {};
  const int last_row = (q0 + kBlockRows < s.T ? q0 + kBlockRows : s.T) - 1;
  for (int k0 = 0; k0 <= last_row; k0 += kBackwardCols) {
    __syncthreads();  // the previous tiles are no longer read (and q, dout are loaded)
    load_rows<H, kBackwardCols>(k_tile, k_cols, k0, s.T,
                                [&](int r) { return key_row(qkv, s, b, r, kv); });
    load_rows<H, kBackwardCols>(v_tile, static_cast<F*>(nullptr), k0, s.T,
                                [&](int r) { return value_row(qkv, s, b, r, kv); });
    __syncthreads();
    if (k0 > row0 + kWarpRows - 1) continue;  // every key of the tile is after this warp's rows
    float p[kBackwardCols / 8][4] = {};       // S = Q_w·Kᵀ, then P
    float ds[kBackwardCols / 8][4] = {};      // dP = dO_w·Vᵀ, then dS
    two_products<F, H>(p, q_fragment, k_tile, ds, do_fragment, v_tile, lane);
    // Keys after a row, and rows past T, are masked (-inf: P = 0) on the tiles that have them.
    if (k0 + kBackwardCols - 1 > row0 || row0 + kWarpRows > s.T) {
#pragma unroll
      for (int j = 0; j < kBackwardCols / 8; ++j) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int key = k0 + 8 * j + fragment_col(lane, e);
          if (key > rows[e / 2] || rows[e / 2] >= s.T) p[j][e] = -INFINITY;
        }
      }
    }
#pragma unroll
    for (int j = 0; j < kBackwardCols / 8; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        p[j][e] = rounded<F>(exp2f(p[j][e] * scale - row_lse[e / 2]));
        ds[j][e] = p[j][e] * (ds[j][e] - row_delta[e / 2]);
      }
    }
    accumulate_product<F, H, kBackwardCols>(dq, ds, k_cols, lane);  // dQ += dS·K
  }
  store_rows<F, H>(dq, rows, s.T, s.scale, s.scale, lane,
                   [&](int row) { return query_row(dqkv, s, b, row, h); });
}

}  // namespace

template <typename F>
void flash_attention_backward(F* dqkv, float* delta, const F* dout, const F* qkv, const F* out,
                              const float* lse, int B, int T, int NH, int NKV, int HS,
                              cudaStream_t stream) {
  const Shape s = checked_shape(sizeof(F), B, T, NH, NKV, HS);
  check_aligned(dqkv, dout, qkv, out);
  const std::size_t rows = static_cast<std::size_t>(B) * NH * T;
  flash_delta_kernel<<<ceil_div(rows, kBlockThreads / kWarp), kBlockThreads, 0, stream>>>(
      delta, dout, out, B, s);
  AT_CUDA_CHECK_LAUNCH();
  const unsigned tiles = ceil_div(static_cast<std::size_t>(T), kBlockRows);
  with_head_size(HS, [&](auto head) {
    flash_dkdv_kernel<F, decltype(head)::value>
        <<<dim3(tiles, static_cast<unsigned>(B * NKV)), kWarps * kWarp, 0, stream>>>(
            dqkv, dout, qkv, lse, delta, s);
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
  flash_attention_backward(dqkv, delta, dout, qkv, out, lse, B, T, NH, NH, C / NH, stream);
}

#define AT_FLASH_BACKWARD(F)                                                                      \
  template void flash_attention_backward<F>(F*, float*, const F*, const F*, const F*,             \
                                            const float*, int, int, int, int, int, cudaStream_t); \
  template void flash_attention_backward<F>(F*, float*, const F*, const F*, const F*,             \
                                            const float*, int, int, int, int, cudaStream_t);
AT_FLASH_BACKWARD(__nv_bfloat16)
AT_FLASH_BACKWARD(__half)

}  // namespace autotrain::kernels::gpu
