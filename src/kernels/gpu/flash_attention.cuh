#pragma once
// Private to flash attention (flash_attention.cu: the forward; flash_attention_backward.cu): the
// tile sizes, the grouped-query shape, the rows a block and a warp own, the tile loads, the masks
// and the warp-level products on mma.sync (mma.cuh) that both directions use.
//
// Shared tiles are row-major with 8 elements (16 bytes) of padding per row: the 8 rows a fragment
// load touches then start in 8 different groups of 4 banks, so fragment loads are conflict-free.
// Operands whose B fragment runs along the rows of the source (V for P·V, dout and Q for the
// backward's ·dO and ·Q, K for dS·K) are stored transposed ("cols" tiles) while loading.
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "autotrain/kernels/gpu/flash_attention.hpp"
#include "common.cuh"
#include "mma.cuh"

namespace autotrain::kernels::gpu {
namespace {

constexpr int kHeadStep = 16;                   // head sizes are multiples of mma's K
constexpr int kMaxSharedHead = 64;              // above, a warp's own rows are not staged
constexpr int kMaxHeldHead = 128;               // above, the forward's Q fragments are not held
constexpr int kMaxHead = 256;                   // the largest head size (Gemma's)
constexpr int kWarps = 4;                       // warps per block
constexpr int kWarpRows = 16;                   // mma's M: the rows (queries or keys) a warp owns
constexpr int kBlockRows = kWarps * kWarpRows;  // rows a block owns
constexpr float kLog2e = 1.4426950408889634f;

// Keys per forward tile, and queries (dK dV) or keys (dQ) per backward tile: half as many above
// head size 128, so that a block's static shared memory stays within 48 KB.
template <int H>
inline constexpr int kForwardKeys = H > kMaxHeldHead ? 32 : 64;
template <int H>
inline constexpr int kBackwardCols = H > kMaxHeldHead ? 16 : 32;
// The parts dK and dV's columns are split into (one block each): above head size 128 a warp's
// whole dK and dV rows would not fit in its registers. Each part recomputes the scores.
template <int H>
inline constexpr int kColumnParts = H > kMaxHeldHead ? 2 : 1;

// Row stride of a shared tile of `cols` elements per row (see the top of this file).
__host__ __device__ constexpr int padded(int cols) {
  return cols + 8;
}

// The grouped-query layout of attention.hpp: qkv rows of NH query heads, then NKV key heads,
// then NKV value heads; query head h reads key/value head h / group. The scores are
// AttentionOptions': q·k times `scale`, soft-capped where cap > 0, and a query sees only the
// `window` last keys up to itself where window > 0.
struct Shape {
  int T;
  int NH;
  int NKV;
  int HS;
  int group;  // NH / NKV
  float scale;
  float cap;   // 0: none
  int window;  // 0: none

  __host__ __device__ std::size_t row() const {
    return static_cast<std::size_t>(NH + 2 * NKV) * HS;
  }
  __host__ __device__ std::size_t out_row() const { return static_cast<std::size_t>(NH) * HS; }

  // The first key query t sees, and whether key k is in query t's window (k <= t is the mask's).
  __device__ int first_visible(int t) const {
    return window > 0 && t >= window ? t - window + 1 : 0;
  }
  __device__ bool in_window(int t, int k) const { return window == 0 || k > t - window; }
  // The end (exclusive, at most T) of the queries that see some key before `key_end`.
  __device__ int queries_seeing(int key_end) const {
    return window > 0 && key_end - 1 + window < T ? key_end - 1 + window : T;
  }

  // Score q·k as the softmax sees it, in log2 units (exp2 of it is the unnormalised probability):
  // scaled, then capped. d_capped is the derivative of the cap (1 without one), which the
  // backward multiplies into dS.
  __device__ float logit2(float qk) const {
    if (cap == 0.0f) return qk * (scale * kLog2e);
    return cap * tanhf(qk * scale / cap) * kLog2e;
  }
  __device__ float logit2(float qk, float& d_capped) const {
    if (cap == 0.0f) {
      d_capped = 1.0f;
      return qk * (scale * kLog2e);
    }
    const float t = tanhf(qk * scale / cap);
    d_capped = 1.0f - t * t;
    return cap * t * kLog2e;
  }
};

// Row t of query head h, key head kv or value head kv in qkv [B, T, (NH + 2·NKV)·HS] (or dqkv).
template <typename F>
__device__ __forceinline__ F* query_row(F* qkv, const Shape& s, int b, int t, int h) {
  return qkv + (static_cast<std::size_t>(b) * s.T + t) * s.row() +
         static_cast<std::size_t>(h) * s.HS;
}
template <typename F>
__device__ __forceinline__ F* key_row(F* qkv, const Shape& s, int b, int t, int kv) {
  return query_row(qkv, s, b, t, s.NH + kv);
}
template <typename F>
__device__ __forceinline__ F* value_row(F* qkv, const Shape& s, int b, int t, int kv) {
  return query_row(qkv, s, b, t, s.NH + s.NKV + kv);
}

// Offset of row t of head h in out and dout [B, T, NH·HS].
__device__ __forceinline__ std::size_t out_at(const Shape& s, int b, int t, int h) {
  return (static_cast<std::size_t>(b) * s.T + t) * s.out_row() + static_cast<std::size_t>(h) * s.HS;
}

// Copies rows [first, first + Rows) of a [T, H] operand into `tile` (row-major, ld padded(H))
// and/or columns [c0, c0 + ColsH) of them into `cols` (transposed: cols[d - c0][r], ld
// padded(Rows)); either may be null. Rows past T are zero. Global reads move 16 bytes: H is a
// multiple of 16 elements and the launchers check the operands' alignment, so every row starts on
// a 16-byte boundary. Without `cols`, neighbouring threads read neighbouring packs of a row
// (coalesced); with it, neighbouring rows, so that the lanes' 2-byte stores into a row of `cols`
// fall in 16 different banks instead of 2.
template <int H, int Rows, int ColsH = H, typename F, typename Row>
__device__ __forceinline__ void load_rows(F* tile, F* cols, int first, int T, Row row, int c0 = 0) {
  constexpr int W = kPack<F>;
  constexpr int packs = H / W;
  for (int i = static_cast<int>(threadIdx.x); i < Rows * packs; i += static_cast<int>(blockDim.x)) {
    const int r = cols == nullptr ? i / packs : i % Rows;
    const int d = (cols == nullptr ? i % packs : i / Rows) * W;
    const bool to_cols = cols != nullptr && d >= c0 && d < c0 + ColsH;
    if (tile == nullptr && !to_cols) continue;
    Packed<F, W> values;
    if (first + r < T) {
      values = load_packed<W>(row(first + r) + d);
    } else {
      for (int j = 0; j < W; ++j) values.set(j, 0.0f);
    }
    if (tile != nullptr) store_packed(tile + r * padded(H) + d, values);
    if (to_cols) {
      for (int j = 0; j < W; ++j) cols[(d - c0 + j) * padded(Rows) + r] = values.values[j];
    }
  }
}

// The A fragment of columns [16k, 16k + 16) of a warp's 16 rows straight from global memory:
// lane l's rows are rows[0] = row0 + l/4 and rows[1] = row0 + l/4 + 8 (mma.cuh's layout); rows
// past T are zero.
template <typename Row>
__device__ __forceinline__ void load_a_fragment_rows(std::uint32_t (&a)[4], int k,
                                                     const int (&rows)[2], int T, int lane,
                                                     Row row) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int r = rows[i % 2];
    const int col = 16 * k + (lane % 4) * 2 + (i / 2) * 8;
    a[i] = r < T ? load_pair(row(r) + col) : 0u;
  }
}

// A warp's rows of a block of kBlockRows rows (queries or keys) from `block_first`: warp w owns
// rows block_first + 16w .. + 15; lane l holds rows[0] = first + l/4 and rows[1] = first + l/4 + 8
// in its fragments (mma.cuh's layout).
struct WarpRows {
  int warp;
  int lane;
  int first;    // the warp's first row
  int rows[2];  // this lane's rows
  __device__ int last() const { return first + kWarpRows - 1; }
};

__device__ __forceinline__ WarpRows warp_rows(int block_first) {
  const int warp = static_cast<int>(threadIdx.x) / kWarp;
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const int first = block_first + warp * kWarpRows;
  return WarpRows{warp, lane, first, {first + lane / 4, first + lane / 4 + 8}};
}

// The query head and tile of a block (query tile, b·NH + h) of the forward or dQ. Tiles are taken
// last first: the last query tiles see the most keys, and starting them first keeps the SMs busy
// to the end.
struct QueryBlock {
  int b;
  int h;
  int kv;     // the key/value head h reads
  int first;  // the tile's first query
  int last;   // its last query before T, the last key the block sees
};

__device__ __forceinline__ QueryBlock query_block(const Shape& s) {
  const int h = static_cast<int>(blockIdx.y) % s.NH;
  const int first = static_cast<int>(gridDim.x - 1 - blockIdx.x) * kBlockRows;
  return QueryBlock{static_cast<int>(blockIdx.y) / s.NH, h, h / s.group, first,
                    (first + kBlockRows < s.T ? first + kBlockRows : s.T) - 1};
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

// Sets the scores x of a warp's rows and the Cols columns from col0 to -inf (P = 0) where
// hidden(row, col) says so (a key after a query or outside its window, a row or column past T).
template <int Cols, typename Hidden>
__device__ __forceinline__ void mask_scores(float (&x)[Cols / 8][4], int col0, const WarpRows& w,
                                            const Hidden& hidden) {
#pragma unroll
  for (int j = 0; j < Cols / 8; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      if (hidden(w.rows[e / 2], col0 + 8 * j + fragment_col(w.lane, e))) x[j][e] = -INFINITY;
    }
  }
}

// The backward's mask: P and dS are 0 where hidden(row, col) says so.
template <int Cols, typename Hidden>
__device__ __forceinline__ void clear_hidden(float (&p)[Cols / 8][4], float (&ds)[Cols / 8][4],
                                             int col0, const WarpRows& w, const Hidden& hidden) {
#pragma unroll
  for (int j = 0; j < Cols / 8; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      if (hidden(w.rows[e / 2], col0 + 8 * j + fragment_col(w.lane, e))) {
        p[j][e] = 0.0f;
        ds[j][e] = 0.0f;
      }
    }
  }
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
// y = c·dᵀ, with a and c the warp's 16 rows and b and d the tile's Cols rows (row-major, ld
// padded(H)). a_fragment(k, f) and c_fragment(k, f) fill f with the A fragment of columns
// [16k, 16k + 16) of a and c: from a shared tile, or from global memory (load_a_fragment_rows).
template <typename F, int H, int Cols, typename AFragment, typename CFragment>
__device__ __forceinline__ void two_products(float (&x)[Cols / 8][4], const AFragment& a_fragment,
                                             const F* b, float (&y)[Cols / 8][4],
                                             const CFragment& c_fragment, const F* d, int lane) {
#pragma unroll(H > kMaxHeldHead ? 2 : H / 16)
  for (int k = 0; k < H / 16; ++k) {
    std::uint32_t fa[4];
    std::uint32_t fc[4];
    a_fragment(k, fa);
    c_fragment(k, fc);
#pragma unroll
    for (int j = 0; j < Cols / 8; ++j) {
      std::uint32_t fb[2];
      std::uint32_t fd[2];
      load_b_fragment(fb, b + 8 * j * padded(H) + 16 * k, padded(H), lane);
      load_b_fragment(fd, d + 8 * j * padded(H) + 16 * k, padded(H), lane);
      mma_16x8x16<F>(x[j], fa, fb);
      mma_16x8x16<F>(y[j], fc, fd);
    }
  }
}

inline bool supported_head_size(int HS) {
  return HS % kHeadStep == 0 && HS >= kHeadStep &&
         (HS <= kMaxSharedHead || HS == 96 || HS == kMaxHeldHead || HS == kMaxHead);
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
    case 64:
      return body(std::integral_constant<int, 64>{});
    case 96:
      return body(std::integral_constant<int, 96>{});
    case kMaxHeldHead:
      return body(std::integral_constant<int, kMaxHeldHead>{});
    default:
      return body(std::integral_constant<int, kMaxHead>{});
  }
}

inline Shape checked_shape(std::size_t element_bytes, int B, int T, int NH, int NKV, int HS,
                           const AttentionOptions& options) {
  AT_CHECK(B >= 1 && T >= 1 && flash_attention_supports(element_bytes, NH, NKV, HS),
           "flash attention: needs bf16 or fp16, NH a positive multiple of NKV and a head size of "
           "16, 32, 48, 64, 96, 128 or 256; got ",
           element_bytes, "-byte elements, NH = ", NH, ", NKV = ", NKV, ", head size ", HS);
  AT_CHECK(options.softcap >= 0 && options.window >= 0, "flash attention: soft cap ",
           options.softcap, " and window ", options.window, " must not be negative");
  return Shape{T,
               NH,
               NKV,
               HS,
               NH / NKV,
               options.scale > 0 ? static_cast<float>(options.scale)
                                 : 1.0f / std::sqrt(static_cast<float>(HS)),
               static_cast<float>(options.softcap),
               options.window};
}

// GPT-2's (C, NH): the heads of C / NH, NKV = NH.
inline void check_embedding(int C, int NH) {
  AT_CHECK(NH >= 1 && C >= NH && C % NH == 0, "flash attention: C = ", C,
           " must be a positive multiple of NH = ", NH);
}

// The kernels move rows of qkv, out, dout and dqkv 16 bytes at a time.
template <typename... P>
void check_aligned(const P*... pointers) {
  AT_CHECK(all_aligned_16(pointers...),
           "flash attention: qkv, out, dout and dqkv must start on 16-byte boundaries");
}

}  // namespace
}  // namespace autotrain::kernels::gpu
