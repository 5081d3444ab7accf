// Flash attention (flash_attention.hpp) on mma.sync (mma.cuh): the scores, probabilities and
// accumulators of a warp live in registers, in the fragments the PTX ISA documents, and a product's
// result feeds the next product directly. Shared memory holds only the key/value (forward, dQ) or
// query/dout (dK dV) tiles the block's warps share. This file is the forward and the supported
// shapes; flash_attention_backward.cu the backward; flash_attention.cuh what both use.
//
// Forward: a block owns 64 query rows (4 warps of 16) of one query head and walks the key tiles of
// 64 (32 above head size 128) of its key/value head from the first its first row sees up to the
// diagonal, keeping each row's running maximum m and sum l (online softmax, in log2 units: exp2f
// of the scores scaled, soft-capped and pre-multiplied by log2 e) and its output accumulator O.
// Backward: delta = Σ dout·out per row; dK, dV per block of 64 keys of one key/value head over the
// query tiles of 32 (16 above head size 128) that see them, of each query head of its group; dQ
// per block of 64 queries over the key tiles of 32 (16) it sees. Nothing is accumulated with
// atomics: every output element is written by one thread. P and dS are rounded to the element
// type before their products (as FlashAttention does).
#include "flash_attention.cuh"

namespace autotrain::kernels::gpu {
namespace {

// Whether the forward holds a warp's Q fragments in registers for the whole walk (else it reads
// them from global memory, L1, at each tile: above head size 128 they would crowd O out).
template <int H>
inline constexpr bool kHoldsQuery = H <= kMaxHeldHead;

// S = Q·Kᵀ of a warp's rows for the n-tiles of 8 keys of the tile from k0 (q_fragment(k, f) fills
// f with Q's A fragment of columns [16k, 16k + 16)); n-tiles wholly after the warp's last row,
// or before `first_seen`, the first key its first row sees, stay 0 (the caller masks them).
template <typename F, int H, typename QFragment>
__device__ __forceinline__ void tile_scores(float (&x)[kForwardKeys<H> / 8][4],
                                            const QFragment& q_fragment, const F* k_tile, int k0,
                                            const WarpRows& w, int first_seen) {
#pragma unroll(kHoldsQuery <H> ? H / 16 : 2)  // Q's loads from global memory not all hoisted
  for (int k = 0; k < H / 16; ++k) {
    std::uint32_t qa[4];
    q_fragment(k, qa);
#pragma unroll
    for (int j = 0; j < kForwardKeys<H> / 8; ++j) {
      if (k0 + 8 * j > w.last() || k0 + 8 * j + 7 < first_seen) continue;
      std::uint32_t kb[2];
      load_b_fragment(kb, k_tile + 8 * j * padded(H) + 16 * k, padded(H), w.lane);
      mma_16x8x16<F>(x[j], qa, kb);
    }
  }
}

// Online softmax over a tile's logits x (log2 units, Shape::logit2; masked keys -inf), for a
// warp's rows: the row maximum over the tile (the 4 lanes of a group share a row), the rescale of
// the old sum l and of O by 2^(m_old - m_new), then P = 2^(x - m) in place of x, added into l.
template <int H>
__device__ __forceinline__ void online_softmax(float (&x)[kForwardKeys<H> / 8][4], float (&m)[2],
                                               float (&l)[2], float (&o)[H / 8][4]) {
  constexpr int Keys = kForwardKeys<H>;
  float tile_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
  for (int j = 0; j < Keys / 8; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) tile_max[e / 2] = fmaxf(tile_max[e / 2], x[j][e]);
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
  for (int j = 0; j < Keys / 8; ++j) {
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
}

// Block (query tile, b·NH + h), 4 warps; warp w owns query rows q0 + 16w .. + 15 (query_block,
// warp_rows). The key tiles walked start at the first one the block's first row sees.
template <typename F, int H>
__global__ void __launch_bounds__(kWarps* kWarp)
    flash_forward_kernel(F* out, float* lse, const F* qkv, Shape s) {
  constexpr int Keys = kForwardKeys<H>;
  __shared__ __align__(16) F k_tile[Keys * padded(H)];
  __shared__ __align__(16) F v_cols[H * padded(Keys)];
  const QueryBlock q = query_block(s);
  const WarpRows w = warp_rows(q.first);
  const auto q_row = [&](int r) { return query_row(qkv, s, q.b, r, q.h); };
  // Q's A fragments straight from global memory (rows past T are zero): once, where held.
  std::uint32_t qa[kHoldsQuery<H> ? H / 16 : 1][4];
  if constexpr (kHoldsQuery<H>) {
#pragma unroll
    for (int k = 0; k < H / 16; ++k) load_a_fragment_rows(qa[k], k, w.rows, s.T, w.lane, q_row);
  }
  const auto q_fragment = [&](int k, std::uint32_t(&f)[4]) {
    if constexpr (kHoldsQuery<H>) {
      for (int i = 0; i < 4; ++i) f[i] = qa[k][i];
    } else {
      load_a_fragment_rows(f, k, w.rows, s.T, w.lane, q_row);
    }
  };
  float o[H / 8][4] = {};
  float m[2] = {-INFINITY, -INFINITY};  // running maximum of each row (log2 units)
  float l[2] = {0.0f, 0.0f};  // this lane's part of Σ 2^(x - m); the group sums at the end
  const int first_seen = s.first_visible(w.first);  // by the warp's first row; its last row's:
  const int last_first_seen = s.first_visible(w.last());
  for (int k0 = s.first_visible(q.first) / Keys * Keys; k0 <= q.last; k0 += Keys) {
    __syncthreads();  // the previous tiles are no longer read
    load_rows<H, Keys>(k_tile, static_cast<F*>(nullptr), k0, s.T,
                       [&](int r) { return key_row(qkv, s, q.b, r, q.kv); });
    load_rows<H, Keys>(static_cast<F*>(nullptr), v_cols, k0, s.T,
                       [&](int r) { return value_row(qkv, s, q.b, r, q.kv); });
    __syncthreads();
    // Every key of the tile is after this warp's rows, or before their windows.
    if (k0 > w.last() || k0 + Keys - 1 < first_seen) continue;
    float x[Keys / 8][4] = {};  // S = Q·Kᵀ, then the logits, then P
    tile_scores<F, H>(x, q_fragment, k_tile, k0, w, first_seen);
#pragma unroll
    for (int j = 0; j < Keys / 8; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) x[j][e] = s.logit2(x[j][e]);
    }
    // Only a tile that reaches past some row's last key or past T, or before some row's window,
    // has keys to mask.
    if (k0 + Keys - 1 > w.first || k0 + Keys > s.T) {
      mask_scores<Keys>(x, k0, w, [&](int row, int key) { return key > row || key >= s.T; });
    }
    if (k0 < last_first_seen) {
      mask_scores<Keys>(x, k0, w, [&](int row, int key) { return !s.in_window(row, key); });
    }
    online_softmax<H>(x, m, l, o);
    // O += P·V: P's accumulators are its A fragments; V's B fragments come from its transpose.
    accumulate_product<F, H, Keys>(o, x, v_cols, w.lane);
  }
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    l[i] += __shfl_xor_sync(0xffffffffu, l[i], 1);
    l[i] += __shfl_xor_sync(0xffffffffu, l[i], 2);
  }
  store_rows<F, H>(o, w.rows, s.T, 1.0f / l[0], 1.0f / l[1], w.lane,
                   [&](int row) { return out + out_at(s, q.b, row, q.h); });
  if (w.lane % 4 == 0) {
    for (int i = 0; i < 2; ++i) {
      if (w.rows[i] < s.T) {
        lse[(static_cast<std::size_t>(q.b) * s.NH + q.h) * s.T + w.rows[i]] =
            m[i] / kLog2e + logf(l[i]);
      }
    }
  }
}

}  // namespace

bool flash_attention_supports(std::size_t element_bytes, int NH, int NKV, int HS) {
  return element_bytes == 2 && NH >= 1 && NKV >= 1 && NH % NKV == 0 && supported_head_size(HS);
}

bool flash_attention_supports(std::size_t element_bytes, int C, int NH) {
  return NH >= 1 && C % NH == 0 && flash_attention_supports(element_bytes, NH, NH, C / NH);
}

template <typename F>
void flash_attention_forward(F* out, float* lse, const F* qkv, int B, int T, int NH, int NKV,
                             int HS, cudaStream_t stream, const AttentionOptions& options) {
  const Shape s = checked_shape(sizeof(F), B, T, NH, NKV, HS, options);
  check_aligned(out, qkv);
  const dim3 grid(ceil_div(static_cast<std::size_t>(T), kBlockRows), static_cast<unsigned>(B * NH));
  with_head_size(HS, [&](auto head) {
    flash_forward_kernel<F, decltype(head)::value>
        <<<grid, kWarps * kWarp, 0, stream>>>(out, lse, qkv, s);
  });
  AT_CUDA_CHECK_LAUNCH();
}

template <typename F>
void flash_attention_forward(F* out, float* lse, const F* qkv, int B, int T, int C, int NH,
                             cudaStream_t stream) {
  check_embedding(C, NH);
  flash_attention_forward(out, lse, qkv, B, T, NH, NH, C / NH, stream, {});
}

#define AT_FLASH_FORWARD(F)                                                               \
  template void flash_attention_forward<F>(F*, float*, const F*, int, int, int, int, int, \
                                           cudaStream_t, const AttentionOptions&);        \
  template void flash_attention_forward<F>(F*, float*, const F*, int, int, int, int, cudaStream_t);
AT_FLASH_FORWARD(__nv_bfloat16)
AT_FLASH_FORWARD(__half)

}  // namespace autotrain::kernels::gpu
