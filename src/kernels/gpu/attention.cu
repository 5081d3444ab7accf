// Causal grouped-query attention on the device: the reference path, the choice of path and
// GPT-2's (C, NH) overloads. The fast path (cuBLAS) is attention_fast.cu.
// Reference: one warp owns one (b, h, t) row and computes it from global memory in fp32; it
// writes only that row's outputs, so no two warps share an output and no atomics are needed. The
// backward's dq is one warp per query row (b, h, r), its dk and dv one warp per key/value row
// (b, kv, r), which sums the group's query heads in head order.
// Invariant: dqkv is overwritten (=); every element of dq, dk and dv is written exactly once.
// Shapes as in the header; the geometry is attention.cuh's.
#include <cstdlib>
#include <string>

#include "attention.cuh"
#include "autotrain/core/log.hpp"

namespace autotrain::kernels::gpu {
namespace {

constexpr int kWarpsPerBlock = kBlockThreads / kWarp;

// The (b, h, t) of this warp's row among B·heads·rows rows, or false past the last row.
__device__ __forceinline__ bool warp_row(int B, int heads, int rows, int& b, int& h, int& t) {
  const long long row = static_cast<long long>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarp;
  if (row >= static_cast<long long>(B) * heads * rows) return false;
  t = static_cast<int>(row % rows);
  const long long bh = row / rows;
  h = static_cast<int>(bh % heads);
  b = static_cast<int>(bh / heads);
  return true;
}

// Offset of position (b, t) in qkv [B, T, (NH + 2·NKV)·HS], and of (b, t, head h) in out/dout.
__device__ __forceinline__ std::size_t qkv_row(const Geometry& g, int b, int t) {
  return (static_cast<std::size_t>(b) * g.T + t) * g.row();
}
__device__ __forceinline__ std::size_t out_at(const Geometry& g, int b, int t, int h) {
  return (static_cast<std::size_t>(b) * g.T + t) * g.out_row() + static_cast<std::size_t>(h) * g.HS;
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
  if (!warp_row(B, g.NH, g.T, b, h, t)) return;
  const int lane = static_cast<int>(threadIdx.x % kWarp);
  const std::size_t key = g.key(h / g.group);
  const std::size_t value = g.value(h / g.group);
  float* q = staged_q + (threadIdx.x / kWarp) * g.HS;
  const F* q_row = qkv + qkv_row(g, b, t) + g.query(h);
  for (int i = lane; i < g.HS; i += kWarp) q[i] = to_float(q_row[i]) * g.scale;
  __syncwarp();

  const int lo = g.first_visible(t);
  SoftmaxStats stats;
  for (int t2 = lo + lane; t2 <= t; t2 += kWarp) {
    stats.add(g.capped(dot(q, qkv + qkv_row(g, b, t2) + key, g.HS)));
  }
  stats.warp_merge();
  const float row_max = stats.max;
  const float inv_sum = 1.0f / stats.sum;
  F* p_row = att + att_at(g, b, h, t);
  for (int t2 = lane; t2 < g.T; t2 += kWarp) {
    float p = 0.0f;
    if (t2 >= lo && t2 <= t) {
      p = expf(g.capped(dot(q, qkv + qkv_row(g, b, t2) + key, g.HS)) - row_max) * inv_sum;
    }
    p_row[t2] = from_float<F>(p);
  }
  __syncwarp();  // the row's probabilities, written by all lanes, are read by all lanes below

  F* o = out + out_at(g, b, t, h);
  for (int i = lane; i < g.HS; i += kWarp) {
    float sum = 0.0f;
    for (int t2 = lo; t2 <= t; ++t2)
      sum += to_float(p_row[t2]) * to_float(qkv[qkv_row(g, b, t2) + value + i]);
    o[i] = from_float<F>(sum);
  }
}

// dpre[t, t2] = att[t, t2] · (datt[t2] - Σ_j att[t, j]·datt[j]) · scale with datt[t2] = dO[t]·v[t2]
// (softmax and score-scale backward; with a soft cap also times 1 - tanh²(score / cap), the score
// recomputed), written to scratch row (b, h, t) for t2 <= t. Dynamic shared memory: one dO row
// per warp, then (soft cap) one scaled q row per warp.
template <typename F>
__global__ void attention_dpre_kernel(F* dpre, const F* dout, const F* qkv, const F* att, int B,
                                      Geometry g) {
  extern __shared__ float staged_dout[];
  int b = 0, h = 0, t = 0;
  if (!warp_row(B, g.NH, g.T, b, h, t)) return;
  const int lane = static_cast<int>(threadIdx.x % kWarp);
  const std::size_t value = g.value(h / g.group);
  float* d_o = staged_dout + (threadIdx.x / kWarp) * g.HS;
  const F* dout_row = dout + out_at(g, b, t, h);
  for (int i = lane; i < g.HS; i += kWarp) d_o[i] = to_float(dout_row[i]);
  float* q = staged_dout + (kWarpsPerBlock + threadIdx.x / kWarp) * g.HS;
  if (g.cap > 0) {
    const F* q_row = qkv + qkv_row(g, b, t) + g.query(h);
    for (int i = lane; i < g.HS; i += kWarp) q[i] = to_float(q_row[i]) * g.scale;
  }
  __syncwarp();

  const F* p_row = att + att_at(g, b, h, t);
  float weighted = 0.0f;
  for (int t2 = lane; t2 <= t; t2 += kWarp) {
    weighted += to_float(p_row[t2]) * dot(d_o, qkv + qkv_row(g, b, t2) + value, g.HS);
  }
  weighted = warp_sum(weighted);
  F* d_row = dpre + att_at(g, b, h, t);
  for (int t2 = lane; t2 <= t; t2 += kWarp) {
    const float datt = dot(d_o, qkv + qkv_row(g, b, t2) + value, g.HS);
    float d = to_float(p_row[t2]) * (datt - weighted) * g.scale;
    if (g.cap > 0) {
      const float th = tanhf(dot(q, qkv + qkv_row(g, b, t2) + g.key(h / g.group), g.HS) / g.cap);
      d *= 1.0f - th * th;
    }
    d_row[t2] = from_float<F>(d);
  }
}

// The warp of query row (b, h, r) writes dq[r] = Σ_{t2 <= r} dpre[r, t2]·k[t2]; lanes split HS.
template <typename F>
__global__ void attention_dq_kernel(F* dqkv, const F* dpre, const F* qkv, int B, Geometry g) {
  int b = 0, h = 0, r = 0;
  if (!warp_row(B, g.NH, g.T, b, h, r)) return;
  const int lane = static_cast<int>(threadIdx.x % kWarp);
  const std::size_t key = g.key(h / g.group);
  const F* dpre_row = dpre + att_at(g, b, h, r);
  for (int i = lane; i < g.HS; i += kWarp) {
    float dq = 0.0f;
    for (int t2 = 0; t2 <= r; ++t2) {
      dq += to_float(dpre_row[t2]) * to_float(qkv[qkv_row(g, b, t2) + key + i]);
    }
    dqkv[qkv_row(g, b, r) + g.query(h) + i] = from_float<F>(dq);
  }
}

// The warp of key/value row (b, kv, r) writes dk[r] = Σ_h Σ_{t >= r} dpre_h[t, r]·q_h[t] and
// dv[r] = Σ_h Σ_{t >= r} att_h[t, r]·dO_h[t] over the query heads h of the group, in order; lanes
// split HS.
template <typename F>
__global__ void attention_dkv_kernel(F* dqkv, const F* dpre, const F* dout, const F* qkv,
                                     const F* att, int B, Geometry g) {
  int b = 0, kv = 0, r = 0;
  if (!warp_row(B, g.NKV, g.T, b, kv, r)) return;
  const int lane = static_cast<int>(threadIdx.x % kWarp);
  const std::size_t column = static_cast<std::size_t>(r);  // column r of dpre and att
  for (int i = lane; i < g.HS; i += kWarp) {
    float dk = 0.0f;
    float dv = 0.0f;
    for (int h = kv * g.group; h < (kv + 1) * g.group; ++h) {
      for (int t = r; t < g.T; ++t) {
        const std::size_t at = att_at(g, b, h, t) + column;
        dk += to_float(dpre[at]) * to_float(qkv[qkv_row(g, b, t) + g.query(h) + i]);
        dv += to_float(att[at]) * to_float(dout[out_at(g, b, t, h) + i]);
      }
    }
    dqkv[qkv_row(g, b, r) + g.key(kv) + i] = from_float<F>(dk);
    dqkv[qkv_row(g, b, r) + g.value(kv) + i] = from_float<F>(dv);
  }
}

unsigned row_blocks(int B, int heads, int rows) {
  return ceil_div(static_cast<std::size_t>(B) * heads * rows, kWarpsPerBlock);
}

std::size_t staged_bytes(const Geometry& g) {
  return sizeof(float) * static_cast<std::size_t>(kWarpsPerBlock) * g.HS;
}

// The geometry with the options of the reference path.
Geometry with_options(Geometry g, const AttentionOptions& options) {
  g.scale = static_cast<float>(options.scale_for(g.HS));
  g.cap = static_cast<float>(options.softcap);
  g.window = options.window;
  return g;
}

AttentionKind kind_from_environment() {
  const AttentionKind kind = parse_attention_kind(std::getenv("AUTOTRAIN_CUDA_ATTENTION"));
  if (kind == AttentionKind::reference) {
    log::info(
        "attention: AUTOTRAIN_CUDA_ATTENTION=reference, using the slow reference CUDA "
        "attention kernels");
  }
  return kind;
}

}  // namespace

AttentionKind attention_kind() {
  static const AttentionKind kind = kind_from_environment();
  return kind;
}

bool attention_uses_reference() {
  return attention_kind() == AttentionKind::reference;
}

template <typename F>
void attention_forward_reference(F* out, F* att, const F* qkv, int B, int T, int NH, int NKV,
                                 int HS, cudaStream_t stream, const AttentionOptions& options) {
  const Geometry g = with_options(checked_geometry(B, T, NH, NKV, HS), options);
  attention_forward_kernel<<<row_blocks(B, NH, T), kBlockThreads, staged_bytes(g), stream>>>(
      out, att, qkv, B, g);
  AT_CUDA_CHECK_LAUNCH();
}

template <typename F>
void attention_backward_reference(F* dqkv, F* scratch, const F* dout, const F* qkv, const F* att,
                                  int B, int T, int NH, int NKV, int HS, cudaStream_t stream,
                                  const AttentionOptions& options) {
  const Geometry g = with_options(checked_geometry(B, T, NH, NKV, HS), options);
  const std::size_t staged = staged_bytes(g) * (g.cap > 0 ? 2 : 1);
  attention_dpre_kernel<<<row_blocks(B, NH, T), kBlockThreads, staged, stream>>>(scratch, dout, qkv,
                                                                                 att, B, g);
  AT_CUDA_CHECK_LAUNCH();
  attention_dq_kernel<<<row_blocks(B, NH, T), kBlockThreads, 0, stream>>>(dqkv, scratch, qkv, B, g);
  AT_CUDA_CHECK_LAUNCH();
  attention_dkv_kernel<<<row_blocks(B, NKV, T), kBlockThreads, 0, stream>>>(dqkv, scratch, dout,
                                                                            qkv, att, B, g);
  AT_CUDA_CHECK_LAUNCH();
}

template <typename F>
void attention_forward(F* out, F* att, const F* qkv, int B, int T, int NH, int NKV, int HS,
                       cudaStream_t stream, const AttentionOptions& options) {
  if (attention_uses_reference() || !options.plain()) {
    attention_forward_reference(out, att, qkv, B, T, NH, NKV, HS, stream, options);
  } else {
    attention_forward_fast(out, att, qkv, B, T, NH, NKV, HS, stream);
  }
}

template <typename F>
void attention_backward(F* dqkv, F* scratch, const F* dout, const F* qkv, const F* att, int B,
                        int T, int NH, int NKV, int HS, cudaStream_t stream,
                        const AttentionOptions& options) {
  if (attention_uses_reference() || !options.plain()) {
    attention_backward_reference(dqkv, scratch, dout, qkv, att, B, T, NH, NKV, HS, stream, options);
  } else {
    attention_backward_fast(dqkv, scratch, dout, qkv, att, B, T, NH, NKV, HS, stream);
  }
}

// GPT-2's (C, NH) overloads: NKV = NH, HS = C / NH.
// Each path's forward and backward in GPT-2's (C, NH), SUFFIX naming the path (none, _fast,
// _reference) as in AT_ATTENTION_PATH below.
#define AT_GPT2_OVERLOADS(SUFFIX)                                                                 \
  template <typename F>                                                                           \
  void attention_forward##SUFFIX(F* out, F* att, const F* qkv, int B, int T, int C, int NH,       \
                                 cudaStream_t stream) {                                           \
    check_embedding(C, NH);                                                                       \
    attention_forward##SUFFIX(out, att, qkv, B, T, NH, NH, C / NH, stream);                       \
  }                                                                                               \
  template <typename F>                                                                           \
  void attention_backward##SUFFIX(F* dqkv, F* scratch, const F* dout, const F* qkv, const F* att, \
                                  int B, int T, int C, int NH, cudaStream_t stream) {             \
    check_embedding(C, NH);                                                                       \
    attention_backward##SUFFIX(dqkv, scratch, dout, qkv, att, B, T, NH, NH, C / NH, stream);      \
  }
AT_GPT2_OVERLOADS()
AT_GPT2_OVERLOADS(_fast)
AT_GPT2_OVERLOADS(_reference)

#define AT_ATTENTION_PATH(F, SUFFIX)                                                               \
  template void attention_forward##SUFFIX<F>(F*, F*, const F*, int, int, int, int, int,            \
                                             cudaStream_t, const AttentionOptions&);               \
  template void attention_backward##SUFFIX<F>(F*, F*, const F*, const F*, const F*, int, int, int, \
                                              int, int, cudaStream_t, const AttentionOptions&);    \
  template void attention_forward##SUFFIX<F>(F*, F*, const F*, int, int, int, int, cudaStream_t);  \
  template void attention_backward##SUFFIX<F>(F*, F*, const F*, const F*, const F*, int, int, int, \
                                              int, cudaStream_t);
// The fast path's GQA functions are instantiated in attention_fast.cu.
#define AT_ATTENTION(F)                                                                         \
  AT_ATTENTION_PATH(F, )                                                                        \
  AT_ATTENTION_PATH(F, _reference)                                                              \
  template void attention_forward_fast<F>(F*, F*, const F*, int, int, int, int, cudaStream_t);  \
  template void attention_backward_fast<F>(F*, F*, const F*, const F*, const F*, int, int, int, \
                                           int, cudaStream_t);
AT_GPU_INSTANTIATE(AT_ATTENTION)

}  // namespace autotrain::kernels::gpu
