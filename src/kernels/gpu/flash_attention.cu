// Flash attention (flash_attention.hpp) on mma.sync (mma.cuh): the scores, probabilities and
// accumulators of a warp live in registers, in the fragments the PTX ISA documents, and a product's
// result feeds the next product directly. Shared memory holds only the key/value (forward, dQ) or
// query/dout (dK dV) tiles the block's warps share.
//
// Forward: a block owns 64 query rows (4 warps of 16) and walks key tiles of 64 up to the
// diagonal, keeping each row's running maximum m and sum l (online softmax, in log2 units:
// exp2f of scores pre-multiplied by scale·log2 e) and its output accumulator O. Backward: delta =
// Σ dout·out per row; dK, dV per block of 64 keys over the query tiles of 32 at or below the
// diagonal; dQ per block of 64 queries over the key tiles of 32 up to it. Nothing is accumulated
// with atomics: every output element is written by one thread. P and dS are rounded to the element
// type before their products (as FlashAttention does).
//
// Shared tiles are row-major with 8 elements (16 bytes) of padding per row: the 8 rows a fragment
// load touches then start in 8 different groups of 4 banks, so fragment loads are conflict-free.
// Operands whose B fragment runs along the rows of the source (V for P·V, dout and Q for the
// backward's ·dO and ·Q, K for dS·K) are stored transposed ("cols" tiles) while loading.
#include "autotrain/kernels/gpu/flash_attention.hpp"
#include "common.cuh"
#include "mma.cuh"

namespace autotrain::kernels::gpu {
namespace {

constexpr int kMaxHead = 64;                    // head size limit (shared memory stays under 48 KB)
constexpr int kHeadStep = 16;                   // head sizes are multiples of mma's K
constexpr int kWarps = 4;                       // warps per block
constexpr int kWarpRows = 16;                   // mma's M: the rows (queries or keys) a warp owns
constexpr int kBlockRows = kWarps * kWarpRows;  // rows a block owns
constexpr int kForwardKeys = 64;                // keys per forward tile
constexpr int kBackwardCols = 32;               // queries (dK dV) or keys (dQ) per backward tile
constexpr float kLog2e = 1.4426950408889634f;

// Row stride of a shared tile of `cols` elements per row (see the top of this file).
__host__ __device__ constexpr int padded(int cols) {
  return cols + 8;
}

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

__device__ __forceinline__ std::size_t out_at(const Shape& s, int b, int t, int h) {
  return (static_cast<std::size_t>(b) * s.T + t) * s.C + static_cast<std::size_t>(h) * s.HS;
}

// Copies rows [first, first + Rows) of a [T, H] operand into `tile` (row-major, ld padded(H))
// and/or `cols` (transposed: cols[d][r], ld padded(Rows)); either may be null. Rows past T are
// zero. Global reads move 16 bytes: H is a multiple of 16 elements and the launchers check the
// operands' alignment, so every row starts on a 16-byte boundary. Without `cols`, neighbouring
// threads read neighbouring packs of a row (coalesced); with it, neighbouring rows, so that the
// lanes' 2-byte stores into a row of `cols` fall in 16 different banks instead of 2.
template <int H, int Rows, typename F, typename Row>
__device__ __forceinline__ void load_rows(F* tile, F* cols, int first, int T, Row row) {
  constexpr int W = kPack<F>;
  constexpr int packs = H / W;
  for (int i = static_cast<int>(threadIdx.x); i < Rows * packs; i += static_cast<int>(blockDim.x)) {
    const int r = cols == nullptr ? i / packs : i % Rows;
    const int d = (cols == nullptr ? i % packs : i / Rows) * W;
    Packed<F, W> values;
    if (first + r < T) {
      values = load_packed<W>(row(first + r) + d);
    } else {
      for (int j = 0; j < W; ++j) values.set(j, 0.0f);
    }
    if (tile != nullptr) store_packed(tile + r * padded(H) + d, values);
    if (cols != nullptr) {
      for (int j = 0; j < W; ++j) cols[(d + j) * padded(Rows) + r] = values.values[j];
    }
  }
}

// x rounded to F and back: the value a product sees.
template <typename F>
__device__ __forceinline__ float rounded(float x) {
  return to_float(from_float<F>(x));
}

// The column (0..7) of n-tile element e (0..3) of this lane's accumulator, and its row half.
__device__ __forceinline__ int fragment_col(int lane, int e) {
  return (lane % 4) * 2 + (e & 1);
}

// Writes rows `rows` of a 16 x H accumulator, times `factor`, to row pointers dst(row) (rows past
// T skipped).
template <typename F, int H, typename Dst>
__device__ __forceinline__ void store_rows(const float (&acc)[H / 8][4], const int (&rows)[2],
                                           int T, float factor0, float factor1, int lane, Dst dst) {
  for (int half = 0; half < 2; ++half) {
    if (rows[half] >= T) continue;
    const float factor = half == 0 ? factor0 : factor1;
    F* p = dst(rows[half]) + (lane % 4) * 2;
#pragma unroll
    for (int n = 0; n < H / 8; ++n) {
      store_pair(p + 8 * n, pack_pair<F>(acc[n][2 * half] * factor, acc[n][2 * half + 1] * factor));
    }
  }
}

// acc[16, H] += x[16, Cols]·M for a warp: x is an fp32 accumulator of Cols / 8 n-tiles, rounded
// to F as it becomes the A operand (its layout is A's); M [Cols, H] is held transposed in `cols`
// ([H][padded(Cols)]), so its B fragments run along rows.
template <typename F, int H, int Cols>
__device__ __forceinline__ void accumulate_product(float (&acc)[H / 8][4],
                                                   const float (&x)[Cols / 8][4], const F* cols,
                                                   int lane) {
#pragma unroll
  for (int k = 0; k < Cols / 16; ++k) {
    std::uint32_t a[4];
    to_a_fragment<F>(a, x, k);
#pragma unroll
    for (int n = 0; n < H / 8; ++n) {
      std::uint32_t b[2];
      load_b_fragment(b, cols + 8 * n * padded(Cols) + 16 * k, padded(Cols), lane);
      mma_16x8x16<F>(acc[n], a, b);
    }
  }
}

// The backward's two score-shaped products for a warp, over the head dimension: x = a·bᵀ and
// y = c·dᵀ, with a and c the warp's 16 rows and b and d the tile's kBackwardCols rows (all
// row-major, ld padded(H)).
template <typename F, int H>
__device__ __forceinline__ void two_products(float (&x)[kBackwardCols / 8][4], const F* a,
                                             const F* b, float (&y)[kBackwardCols / 8][4],
                                             const F* c, const F* d, int lane) {
#pragma unroll
  for (int k = 0; k < H / 16; ++k) {
    std::uint32_t fa[4];
    std::uint32_t fc[4];
    load_a_fragment(fa, a + 16 * k, padded(H), lane);
    load_a_fragment(fc, c + 16 * k, padded(H), lane);
#pragma unroll
    for (int j = 0; j < kBackwardCols / 8; ++j) {
      std::uint32_t fb[2];
      std::uint32_t fd[2];
      load_b_fragment(fb, b + 8 * j * padded(H) + 16 * k, padded(H), lane);
      load_b_fragment(fd, d + 8 * j * padded(H) + 16 * k, padded(H), lane);
      mma_16x8x16<F>(x[j], fa, fb);
      mma_16x8x16<F>(y[j], fc, fd);
    }
  }
}

// ---- forward -------------------------------------------------------------------------------

// Block (query tile, b·NH + h), 4 warps; warp w owns query rows q0 + 16w .. + 15, lane l rows
// q0 + 16w + l/4 and + 8 (the fragments' rows). Tiles are taken last first: the last query tiles
// see the most keys, and starting them first keeps the SMs busy to the end.
template <typename F, int H>
__global__ void __launch_bounds__(kWarps* kWarp)
    flash_forward_kernel(F* out, float* lse, const F* qkv, Shape s) {
  __shared__ __align__(16) F k_tile[kForwardKeys * padded(H)];
  __shared__ __align__(16) F v_cols[H * padded(kForwardKeys)];
  const int b = static_cast<int>(blockIdx.y) / s.NH;
  const int h = static_cast<int>(blockIdx.y) % s.NH;
  const int q0 = static_cast<int>(gridDim.x - 1 - blockIdx.x) * kBlockRows;
  const int warp = static_cast<int>(threadIdx.x) / kWarp;
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const int row0 = q0 + warp * kWarpRows;
  const int rows[2] = {row0 + lane / 4, row0 + lane / 4 + 8};
  // Q's A fragments straight from global memory, once (rows past T are zero).
  std::uint32_t qa[H / 16][4];
#pragma unroll
  for (int k = 0; k < H / 16; ++k) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int row = rows[i % 2];
      const int col = 16 * k + (lane % 4) * 2 + (i / 2) * 8;
      qa[k][i] = row < s.T ? load_pair(qkv_row(qkv, s, b, row, h, 0) + col) : 0u;
    }
  }
  float o[H / 8][4] = {};
  float m[2] = {-INFINITY, -INFINITY};  // running maximum of each row (log2 units)
  float l[2] = {0.0f, 0.0f};  // this lane's part of Σ 2^(x - m); the group sums at the end
  const float scale = s.scale * kLog2e;
  const int last_row = (q0 + kBlockRows < s.T ? q0 + kBlockRows : s.T) - 1;
  for (int k0 = 0; k0 <= last_row; k0 += kForwardKeys) {
    __syncthreads();  // the previous tiles are no longer read
    load_rows<H, kForwardKeys>(k_tile, static_cast<F*>(nullptr), k0, s.T,
                               [&](int r) { return qkv_row(qkv, s, b, r, h, 1); });
    load_rows<H, kForwardKeys>(static_cast<F*>(nullptr), v_cols, k0, s.T,
                               [&](int r) { return qkv_row(qkv, s, b, r, h, 2); });
    __syncthreads();
    if (k0 > row0 + kWarpRows - 1) continue;  // every key of the tile is after this warp's rows
    // S = Q·Kᵀ for the 8 n-tiles of 8 keys; tiles wholly after the warp's last row stay 0 (masked
    // below).
    float x[kForwardKeys / 8][4] = {};
#pragma unroll
    for (int j = 0; j < kForwardKeys / 8; ++j) {
      if (k0 + 8 * j > row0 + kWarpRows - 1) continue;
#pragma unroll
      for (int k = 0; k < H / 16; ++k) {
        std::uint32_t kb[2];
        load_b_fragment(kb, k_tile + 8 * j * padded(H) + 16 * k, padded(H), lane);
        mma_16x8x16<F>(x[j], qa[k], kb);
      }
    }
    // Online softmax: the row maximum over the tile (the 4 lanes of a group share a row), the
    // rescale of the old sum and O by 2^(m_old - m_new), then P = 2^(x - m). Only a tile that
    // reaches past some row's last key, or past T, has keys to mask.
    if (k0 + kForwardKeys - 1 > row0 || k0 + kForwardKeys > s.T) {
#pragma unroll
      for (int j = 0; j < kForwardKeys / 8; ++j) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int key = k0 + 8 * j + fragment_col(lane, e);
          if (key > rows[e / 2] || key >= s.T) x[j][e] = -INFINITY;
        }
      }
    }
    float tile_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int j = 0; j < kForwardKeys / 8; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        x[j][e] *= scale;
        tile_max[e / 2] = fmaxf(tile_max[e / 2], x[j][e]);
      }
    }
    float alpha[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      tile_max[i] = fmaxf(tile_max[i], __shfl_xor_sync(0xffffffffu, tile_max[i], 1));
      tile_max[i] = fmaxf(tile_max[i], __shfl_xor_sync(0xffffffffu, tile_max[i], 2));
      const float m_new = fmaxf(m[i], tile_max[i]);
      alpha[i] = m_new == -INFINITY ? 1.0f : exp2f(m[i] - m_new);
      m[i] = m_new;
      l[i] *= alpha[i];
    }
#pragma unroll
    for (int j = 0; j < kForwardKeys / 8; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        x[j][e] = x[j][e] == -INFINITY ? 0.0f : exp2f(x[j][e] - m[e / 2]);
        l[e / 2] += x[j][e];
      }
    }
#pragma unroll
    for (int n = 0; n < H / 8; ++n) {
      o[n][0] *= alpha[0];
      o[n][1] *= alpha[0];
      o[n][2] *= alpha[1];
      o[n][3] *= alpha[1];
    }
    // O += P·V: P's accumulators are its A fragments; V's B fragments come from its transpose.
    accumulate_product<F, H, kForwardKeys>(o, x, v_cols, lane);
  }
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    l[i] += __shfl_xor_sync(0xffffffffu, l[i], 1);
    l[i] += __shfl_xor_sync(0xffffffffu, l[i], 2);
  }
  store_rows<F, H>(o, rows, s.T, 1.0f / l[0], 1.0f / l[1], lane,
                   [&](int row) { return out + out_at(s, b, row, h); });
  if (lane % 4 == 0) {
    for (int i = 0; i < 2; ++i) {
      if (rows[i] < s.T) {
        lse[(static_cast<std::size_t>(b) * s.NH + h) * s.T + rows[i]] = m[i] / kLog2e + logf(l[i]);
      }
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
  const std::size_t at = out_at(s, b, t, h);
  float sum = 0.0f;
  for (int d = lane; d < s.HS; d += kWarp) sum += to_float(dout[at + d]) * to_float(out[at + d]);
  sum = warp_sum(sum);
  if (lane == 0) delta[row] = sum;
}

// Block (key tile, b·NH + h), 4 warps; warp w owns keys k0 + 16w .. + 15 (lane l: keys
// + l/4 and + l/4 + 8). For each query tile of 32 at or below the diagonal: Sᵀ = K_w·Qᵀ, Pᵀ,
// dV_w += Pᵀ·dO, dPᵀ = V_w·dOᵀ, dSᵀ = Pᵀ∘(dPᵀ - delta), dK_w += dSᵀ·Q; dK is scaled once at the
// end. The first key tiles see the most queries and start first.
template <typename F, int H>
__global__ void __launch_bounds__(kWarps* kWarp)
    flash_dkdv_kernel(F* dqkv, const F* dout, const F* qkv, const float* lse, const float* delta,
                      Shape s) {
  __shared__ __align__(16) F k_tile[kBlockRows * padded(H)];
  __shared__ __align__(16) F v_tile[kBlockRows * padded(H)];
  __shared__ __align__(16) F q_tile[kBackwardCols * padded(H)];
  __shared__ __align__(16) F q_cols[H * padded(kBackwardCols)];
  __shared__ __align__(16) F do_tile[kBackwardCols * padded(H)];
  __shared__ __align__(16) F do_cols[H * padded(kBackwardCols)];
  __shared__ float lse_tile[kBackwardCols];  // log2 units
  __shared__ float delta_tile[kBackwardCols];
  const int b = static_cast<int>(blockIdx.y) / s.NH;
  const int h = static_cast<int>(blockIdx.y) % s.NH;
  const int k0 = static_cast<int>(blockIdx.x) * kBlockRows;
  const int warp = static_cast<int>(threadIdx.x) / kWarp;
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const int key0 = k0 + warp * kWarpRows;
  const int keys[2] = {key0 + lane / 4, key0 + lane / 4 + 8};
  const std::size_t head_rows = (static_cast<std::size_t>(b) * s.NH + h) * s.T;
  const float scale = s.scale * kLog2e;
  load_rows<H, kBlockRows>(k_tile, static_cast<F*>(nullptr), k0, s.T,
                           [&](int r) { return qkv_row(qkv, s, b, r, h, 1); });
  load_rows<H, kBlockRows>(v_tile, static_cast<F*>(nullptr), k0, s.T,
                           [&](int r) { return qkv_row(qkv, s, b, r, h, 2); });
  const F* k_w = k_tile + warp * kWarpRows * padded(H);
  const F* v_w = v_tile + warp * kWarpRows * padded(H);
  float dk[H / 8][4] = {};
  float dv[H / 8][4] = {};
  for (int q0 = k0; q0 < s.T; q0 += kBackwardCols) {
    __syncthreads();  // the previous tiles are no longer read (and k, v are loaded)
    load_rows<H, kBackwardCols>(q_tile, q_cols, q0, s.T,
                                [&](int r) { return qkv_row(qkv, s, b, r, h, 0); });
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
    two_products<F, H>(p, k_w, q_tile, dp, v_w, do_tile, lane);
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
  const auto row_of = [&](int key, int part) {
    return dqkv + (static_cast<std::size_t>(b) * s.T + key) * 3 * s.C +
           static_cast<std::size_t>(part) * s.C + static_cast<std::size_t>(h) * s.HS;
  };
  store_rows<F, H>(dk, keys, s.T, s.scale, s.scale, lane, [&](int key) { return row_of(key, 1); });
  store_rows<F, H>(dv, keys, s.T, 1.0f, 1.0f, lane, [&](int key) { return row_of(key, 2); });
}

// Block (query tile, b·NH + h), 4 warps; warp w owns queries q0 + 16w .. + 15. For each key tile
// of 32 up to the diagonal: S = Q_w·Kᵀ, P, dP = dO_w·Vᵀ, dS = P∘(dP - delta), dQ_w += dS·K.
// Query tiles are taken last first, as in the forward.
template <typename F, int H>
__global__ void __launch_bounds__(kWarps* kWarp)
    flash_dq_kernel(F* dqkv, const F* dout, const F* qkv, const float* lse, const float* delta,
                    Shape s) {
  __shared__ __align__(16) F q_tile[kBlockRows * padded(H)];
  __shared__ __align__(16) F do_tile[kBlockRows * padded(H)];
  __shared__ __align__(16) F k_tile[kBackwardCols * padded(H)];
  __shared__ __align__(16) F k_cols[H * padded(kBackwardCols)];
  __shared__ __align__(16) F v_tile[kBackwardCols * padded(H)];
  const int b = static_cast<int>(blockIdx.y) / s.NH;
  const int h = static_cast<int>(blockIdx.y) % s.NH;
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
  load_rows<H, kBlockRows>(q_tile, static_cast<F*>(nullptr), q0, s.T,
                           [&](int r) { return qkv_row(qkv, s, b, r, h, 0); });
  load_rows<H, kBlockRows>(do_tile, static_cast<F*>(nullptr), q0, s.T,
                           [&](int r) { return dout + out_at(s, b, r, h); });
  const F* q_w = q_tile + warp * kWarpRows * padded(H);
  const F* do_w = do_tile + warp * kWarpRows * padded(H);
  float dq[H / 8][4] = {};
  const int last_row = (q0 + kBlockRows < s.T ? q0 + kBlockRows : s.T) - 1;
  for (int k0 = 0; k0 <= last_row; k0 += kBackwardCols) {
    __syncthreads();  // the previous tiles are no longer read (and q, dout are loaded)
    load_rows<H, kBackwardCols>(k_tile, k_cols, k0, s.T,
                                [&](int r) { return qkv_row(qkv, s, b, r, h, 1); });
    load_rows<H, kBackwardCols>(v_tile, static_cast<F*>(nullptr), k0, s.T,
                                [&](int r) { return qkv_row(qkv, s, b, r, h, 2); });
    __syncthreads();
    if (k0 > row0 + kWarpRows - 1) continue;  // every key of the tile is after this warp's rows
    float p[kBackwardCols / 8][4] = {};       // S = Q_w·Kᵀ, then P
    float ds[kBackwardCols / 8][4] = {};      // dP = dO_w·Vᵀ, then dS
    two_products<F, H>(p, q_w, k_tile, ds, do_w, v_tile, lane);
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
  store_rows<F, H>(dq, rows, s.T, s.scale, s.scale, lane, [&](int row) {
    return dqkv + (static_cast<std::size_t>(b) * s.T + row) * 3 * s.C +
           static_cast<std::size_t>(h) * s.HS;
  });
}

// Calls body(std::integral_constant<int, HS>) for a supported head size (checked_shape ran).
template <typename Body>
void with_head_size(int HS, const Body& body) {
  switch (HS) {
    case 16:
      return body(std::integral_constant<int, 16>{});
    case 32:
      return body(std::integral_constant<int, 32>{});
    case 48:
      return body(std::integral_constant<int, 48>{});
    default:
      return body(std::integral_constant<int, 64>{});
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
  return HS % kHeadStep == 0 && HS <= kMaxHead;
}

template <typename F>
void flash_attention_forward(F* out, float* lse, const F* qkv, int B, int T, int C, int NH,
                             cudaStream_t stream) {
  const Shape s = checked_shape(sizeof(F), B, T, C, NH);
  check_aligned(out, qkv);
  const dim3 grid(ceil_div(static_cast<std::size_t>(T), kBlockRows), static_cast<unsigned>(B * NH));
  with_head_size(s.HS, [&](auto head) {
    flash_forward_kernel<F, decltype(head)::value>
        <<<grid, kWarps * kWarp, 0, stream>>>(out, lse, qkv, s);
  });
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
  const dim3 grid(ceil_div(static_cast<std::size_t>(T), kBlockRows), static_cast<unsigned>(B * NH));
  with_head_size(s.HS, [&](auto head) {
    flash_dkdv_kernel<F, decltype(head)::value>
        <<<grid, kWarps * kWarp, 0, stream>>>(dqkv, dout, qkv, lse, delta, s);
  });
  AT_CUDA_CHECK_LAUNCH();
  with_head_size(s.HS, [&](auto head) {
    flash_dq_kernel<F, decltype(head)::value>
        <<<grid, kWarps * kWarp, 0, stream>>>(dqkv, dout, qkv, lse, delta, s);
  });
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
