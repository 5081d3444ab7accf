// Causal multi-head attention forward and backward on the device (the part between the qkv and
// output projections), fp32 arithmetic. One warp owns one (b, h, t) row: it writes only that
// row's outputs, so no two warps share an output and no atomics are needed.
// Invariant: dqkv is overwritten (=); every element of dq, dk and dv is written exactly once.
// Shapes as in the header; HS = C / NH; qkv row (b, t) holds q | k | v, each [NH, HS].
#include <cmath>

#include "autotrain/kernels/cuda/attention.hpp"
#include "common.cuh"

namespace autotrain::kernels::gpu {
namespace {

constexpr int kWarpsPerBlock = kBlockThreads / kWarp;

struct Geometry {
  int T;
  int C;
  int NH;
  int HS;
  float scale;  // 1 / sqrt(HS)
};

// The (b, h, t) of this warp's row, or false past the last row.
__device__ __forceinline__ bool warp_row(const Geometry& g, int B, int& b, int& h, int& t) {
  const long long row = static_cast<long long>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarp;
  if (row >= static_cast<long long>(B) * g.NH * g.T) return false;
  t = static_cast<int>(row % g.T);
  const long long bh = row / g.T;
  h = static_cast<int>(bh % g.NH);
  b = static_cast<int>(bh / g.NH);
  return true;
}

// Offset of part (0 q, 1 k, 2 v) of head h at position (b, t) in qkv [B, T, 3C].
__device__ __forceinline__ std::size_t qkv_at(const Geometry& g, int b, int t, int h, int part) {
  return (static_cast<std::size_t>(b) * g.T + t) * 3 * g.C + static_cast<std::size_t>(part) * g.C +
         static_cast<std::size_t>(h) * g.HS;
}

// Offset of row (b, h, t) of att [B, NH, T, T].
__device__ __forceinline__ std::size_t att_at(const Geometry& g, int b, int h, int t) {
  return ((static_cast<std::size_t>(b) * g.NH + h) * g.T + t) * g.T;
}

template <typename F>
__device__ __forceinline__ float dot(const float* staged, const F* row, int HS) {
  float sum = 0.0f;
  for (int i = 0; i < HS; ++i) sum += staged[i] * to_float(row[i]);
  return sum;
}

// Lanes split the keys t2 <= t. Pass 1 folds each lane's scores into (max, Σ exp); pass 2
// recomputes the scores and writes the probabilities (0 above the diagonal); pass 3: lanes split
// the head dimension and sum att·v. Dynamic shared memory: one q row per warp [warps, HS].
template <typename F>
__global__ void attention_forward_kernel(F* out, F* att, const F* qkv, int B, Geometry g) {
  extern __shared__ float staged_q[];
  int b = 0, h = 0, t = 0;
  if (!warp_row(g, B, b, h, t)) return;
  const int lane = static_cast<int>(threadIdx.x % kWarp);
  float* q = staged_q + (threadIdx.x / kWarp) * g.HS;
  const F* q_row = qkv + qkv_at(g, b, t, h, 0);
  for (int i = lane; i < g.HS; i += kWarp) q[i] = to_float(q_row[i]) * g.scale;
  __syncwarp();

  float row_max = -INFINITY;
  float row_sum = 0.0f;
  for (int t2 = lane; t2 <= t; t2 += kWarp) {
    const float s = dot(q, qkv + qkv_at(g, b, t2, h, 1), g.HS);
    const float m = fmaxf(row_max, s);
    row_sum = row_sum * expf(row_max - m) + expf(s - m);
    row_max = m;
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    const float other_max = __shfl_xor_sync(0xffffffffu, row_max, offset);
    const float other_sum = __shfl_xor_sync(0xffffffffu, row_sum, offset);
    const float m = fmaxf(row_max, other_max);
    // A lane with no keys holds (-inf, 0); two of them merge to (-inf, 0), not exp(-inf + inf).
    if (m != -INFINITY) row_sum = row_sum * expf(row_max - m) + other_sum * expf(other_max - m);
    row_max = m;
  }
  const float inv_sum = 1.0f / row_sum;
  F* p_row = att + att_at(g, b, h, t);
  for (int t2 = lane; t2 < g.T; t2 += kWarp) {
    float p = 0.0f;
    if (t2 <= t) p = expf(dot(q, qkv + qkv_at(g, b, t2, h, 1), g.HS) - row_max) * inv_sum;
    p_row[t2] = from_float<F>(p);
  }
  __syncwarp();  // the row's probabilities, written by all lanes, are read by all lanes below

  F* o = out + (static_cast<std::size_t>(b) * g.T + t) * g.C + static_cast<std::size_t>(h) * g.HS;
  for (int i = lane; i < g.HS; i += kWarp) {
    float sum = 0.0f;
    for (int t2 = 0; t2 <= t; ++t2)
      sum += to_float(p_row[t2]) * to_float(qkv[qkv_at(g, b, t2, h, 2) + i]);
    o[i] = from_float<F>(sum);
  }
}

// dpre[t, t2] = att[t, t2] · (datt[t2] - Σ_j att[t, j]·datt[j]) · scale with datt[t2] = dO[t]·v[t2]
// (softmax and score-scale backward), written to scratch row (b, h, t) for t2 <= t.
template <typename F>
__global__ void attention_dpre_kernel(F* dpre, const F* dout, const F* qkv, const F* att, int B,
                                      Geometry g) {
  extern __shared__ float staged_dout[];
  int b = 0, h = 0, t = 0;
  if (!warp_row(g, B, b, h, t)) return;
  const int lane = static_cast<int>(threadIdx.x % kWarp);
  float* d_o = staged_dout + (threadIdx.x / kWarp) * g.HS;
  const F* dout_row =
      dout + (static_cast<std::size_t>(b) * g.T + t) * g.C + static_cast<std::size_t>(h) * g.HS;
  for (int i = lane; i < g.HS; i += kWarp) d_o[i] = to_float(dout_row[i]);
  __syncwarp();

  const F* p_row = att + att_at(g, b, h, t);
  float weighted = 0.0f;
  for (int t2 = lane; t2 <= t; t2 += kWarp) {
    weighted += to_float(p_row[t2]) * dot(d_o, qkv + qkv_at(g, b, t2, h, 2), g.HS);
  }
  weighted = warp_sum(weighted);
  F* d_row = dpre + att_at(g, b, h, t);
  for (int t2 = lane; t2 <= t; t2 += kWarp) {
    const float datt = dot(d_o, qkv + qkv_at(g, b, t2, h, 2), g.HS);
    d_row[t2] = from_float<F>(to_float(p_row[t2]) * (datt - weighted) * g.scale);
  }
}

// The warp of row (b, h, r) writes dq[r] = Σ_{t2 <= r} dpre[r, t2]·k[t2],
// dk[r] = Σ_{t >= r} dpre[t, r]·q[t] and dv[r] = Σ_{t >= r} att[t, r]·dO[t]; lanes split HS.
template <typename F>
__global__ void attention_dqkv_kernel(F* dqkv, const F* dpre, const F* dout, const F* qkv,
                                      const F* att, int B, Geometry g) {
  int b = 0, h = 0, r = 0;
  if (!warp_row(g, B, b, h, r)) return;
  const int lane = static_cast<int>(threadIdx.x % kWarp);
  const F* dpre_row = dpre + att_at(g, b, h, r);
  const std::size_t column = static_cast<std::size_t>(r);  // column r of dpre and att
  for (int i = lane; i < g.HS; i += kWarp) {
    float dq = 0.0f;
    for (int t2 = 0; t2 <= r; ++t2) {
      dq += to_float(dpre_row[t2]) * to_float(qkv[qkv_at(g, b, t2, h, 1) + i]);
    }
    float dk = 0.0f;
    float dv = 0.0f;
    for (int t = r; t < g.T; ++t) {
      const std::size_t at = att_at(g, b, h, t) + column;
      dk += to_float(dpre[at]) * to_float(qkv[qkv_at(g, b, t, h, 0) + i]);
      dv += to_float(att[at]) * to_float(dout[(static_cast<std::size_t>(b) * g.T + t) * g.C +
                                              static_cast<std::size_t>(h) * g.HS + i]);
    }
    dqkv[qkv_at(g, b, r, h, 0) + i] = from_float<F>(dq);
    dqkv[qkv_at(g, b, r, h, 1) + i] = from_float<F>(dk);
    dqkv[qkv_at(g, b, r, h, 2) + i] = from_float<F>(dv);
  }
}

Geometry checked_geometry(int B, int T, int C, int NH) {
  AT_CHECK(B >= 1 && T >= 1 && NH >= 1 && C >= NH && C % NH == 0, "attention: C = ", C,
           " must be a positive multiple of NH = ", NH, " (B = ", B, ", T = ", T, ")");
  const int HS = C / NH;
  AT_CHECK(HS <= kMaxAttentionHeadSize, "attention: head size C / NH = ", HS,
           " exceeds the CUDA kernels' limit of ", kMaxAttentionHeadSize);
  return Geometry{T, C, NH, HS, 1.0f / std::sqrt(static_cast<float>(HS))};
}

unsigned row_blocks(int B, const Geometry& g) {
  return ceil_div(static_cast<std::size_t>(B) * g.NH * g.T, kWarpsPerBlock);
}

std::size_t staged_bytes(const Geometry& g) {
  return sizeof(float) * static_cast<std::size_t>(kWarpsPerBlock) * g.HS;
}

}  // namespace

template <typename F>
void attention_forward(F* out, F* att, const F* qkv, int B, int T, int C, int NH,
                       cudaStream_t stream) {
  const Geometry g = checked_geometry(B, T, C, NH);
  attention_forward_kernel<<<row_blocks(B, g), kBlockThreads, staged_bytes(g), stream>>>(out, att,
                                                                                         qkv, B, g);
  AT_CUDA_CHECK_LAUNCH();
}

template <typename F>
void attention_backward(F* dqkv, F* scratch, const F* dout, const F* qkv, const F* att, int B,
                        int T, int C, int NH, cudaStream_t stream) {
  const Geometry g = checked_geometry(B, T, C, NH);
  attention_dpre_kernel<<<row_blocks(B, g), kBlockThreads, staged_bytes(g), stream>>>(
      scratch, dout, qkv, att, B, g);
  AT_CUDA_CHECK_LAUNCH();
  attention_dqkv_kernel<<<row_blocks(B, g), kBlockThreads, 0, stream>>>(dqkv, scratch, dout, qkv,
                                                                        att, B, g);
  AT_CUDA_CHECK_LAUNCH();
}

#define AT_ATTENTION(F)                                                                         \
  template void attention_forward<F>(F*, F*, const F*, int, int, int, int, cudaStream_t);       \
  template void attention_backward<F>(F*, F*, const F*, const F*, const F*, int, int, int, int, \
                                      cudaStream_t);
AT_GPU_INSTANTIATE(AT_ATTENTION)

}  // namespace autotrain::kernels::gpu
