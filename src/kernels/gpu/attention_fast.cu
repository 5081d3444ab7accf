// Causal grouped-query attention on the tensor cores: per batch row b, cuBLAS strided-batched
// gemms over the heads (fp32 accumulation) and fused causal softmax kernels, one warp per
// (b, h, t) row, fp32 math.
// A product that reads a key or value head (scores = q·kᵀ, out = p·v, d(p) = dO·vᵀ, dq = dS·k) is
// batched over the NKV groups with the query-head operands strided by a whole group: call gi
// takes query heads gi, group + gi, 2·group + gi, ..., so group calls per batch row cover every
// head (NKV = NH: one call, GPT-2's). A product whose output is a key or value head's gradient
// (dv = pᵀ·dO, dk = dSᵀ·q) sums over the group; with group > 1 it runs per query head into the
// query columns of dqkv (free until dq is written last), and a kernel sums each group there in
// head order, in fp32, into the key or value columns: deterministic, no atomics, no extra memory.
// Invariant: dqkv is overwritten (=).
#include <cublas_v2.h>

#include <map>

#include "attention.cuh"
#include "autotrain/kernels/gpu/cublas_check.hpp"

namespace autotrain::kernels::gpu {
namespace {

constexpr int kWarpsPerBlock = kBlockThreads / kWarp;

// cuBLAS workspace per handle: what NVIDIA recommends for Hopper; allocated with the handle.
constexpr std::size_t kCublasWorkspaceBytes = std::size_t{32} << 20;

// A cuBLAS handle bound to the device current at its creation, with its own workspace (cuBLAS
// would otherwise draw on its default pool) and the stream it last queued on.
class CublasHandle {
 public:
  CublasHandle() : workspace_(kCublasWorkspaceBytes) { AT_CUBLAS_CHECK(cublasCreate(&handle_)); }
  ~CublasHandle() {
    if (handle_ != nullptr) cublasDestroy(handle_);
  }
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;

  // The handle, queueing on `stream`. cublasSetStream resets the workspace to cuBLAS's default
  // pool, so ours is set again after it; both only when the stream changes.
  cublasHandle_t on(cudaStream_t stream) {
    if (!has_stream_ || stream != stream_) {
      AT_CUBLAS_CHECK(cublasSetStream(handle_, stream));
      AT_CUBLAS_CHECK(cublasSetWorkspace(handle_, workspace_.data(), workspace_.bytes()));
      stream_ = stream;
      has_stream_ = true;
    }
    return handle_;
  }

 private:
  autotrain::gpu::DeviceBuffer workspace_;
  cublasHandle_t handle_ = nullptr;
  cudaStream_t stream_ = nullptr;
  bool has_stream_ = false;
};

// One handle per (thread, device): a handle must not be used by two threads at once and belongs
// to one device. The public functions take no BlasHandle (the device model calls them with a
// stream only), so the handles live here, created on a device's first call.
cublasHandle_t cublas_on(cudaStream_t stream) {
  thread_local std::map<int, CublasHandle> by_device;
  int device = 0;
  AT_CUDA_CHECK(cudaGetDevice(&device));
  return by_device.try_emplace(device).first->second.on(stream);
}

// Column-major, batched over heads of one batch row, beta = 0 (c is overwritten, never read):
// c_i (m×n, ldc) = alpha · op(a_i) (m×k) · op(b_i) (k×n), x_i = x + i·stride_x.
// A row-major matrix X (r×s, ld) is, read column-major, Xᵀ (s×r, ld): each call below states
// its row-major product and the column-major one it is issued as.
struct Operand {
  const void* data;
  int ld;
  long long stride;
};

template <typename F>
void heads_gemm(cublasHandle_t blas, bool trans_a, bool trans_b, int m, int n, int k, float alpha,
                Operand a, Operand b, F* c, int ldc, long long stride_c, int heads) {
  const float beta = 0.0f;
  AT_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
      blas, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, m, n, k,
      &alpha, a.data, data_type<F>(), a.ld, a.stride, b.data, data_type<F>(), b.ld, b.stride, &beta,
      c, data_type<F>(), ldc, stride_c, heads, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

// Row r = (b·NH + h)·T + t of [B, NH, T, T], one warp each; t is the query position.
__device__ __forceinline__ bool warp_matrix_row(long long rows, int T, long long& row, int& t) {
  row = static_cast<long long>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarp;
  if (row >= rows) return false;
  t = static_cast<int>(row % T);
  return true;
}

// In place on att: row t holds the scaled scores scale·q_t·k_t2 for every t2 on entry and the
// causal softmax on exit (probabilities for t2 <= t, 0 above). fp32 math: each lane folds its
// columns into (max, Σ exp), the warp merges them, then each lane writes its columns.
template <typename F>
__global__ void causal_softmax_kernel(F* att, long long rows, int T) {
  long long row = 0;
  int t = 0;
  if (!warp_matrix_row(rows, T, row, t)) return;
  const int lane = static_cast<int>(threadIdx.x % kWarp);
  F* p = att + row * T;

  SoftmaxStats stats;
  for (int t2 = lane; t2 <= t; t2 += kWarp) stats.add(to_float(p[t2]));
  stats.warp_merge();
  const float row_max = stats.max;
  const float inv_sum = 1.0f / stats.sum;
  // Each lane rewrites only the columns it read itself, after the shuffles above: no hazard.
  for (int t2 = lane; t2 < T; t2 += kWarp) {
    const float prob = t2 <= t ? expf(to_float(p[t2]) - row_max) * inv_sum : 0.0f;
    p[t2] = from_float<F>(prob);
  }
}

// In place on d: row t holds datt[t2] = dO_t·v_t2 for every t2 on entry; on exit
// d(q·k)[t2] = att[t2]·(datt[t2] - Σ_{j<=t} att[j]·datt[j])·scale for t2 <= t, 0 above (the
// gemms after this read whole rows).
template <typename F>
__global__ void causal_softmax_backward_kernel(F* d, const F* att, long long rows, int T,
                                               float scale) {
  long long row = 0;
  int t = 0;
  if (!warp_matrix_row(rows, T, row, t)) return;
  const int lane = static_cast<int>(threadIdx.x % kWarp);
  F* d_row = d + row * T;
  const F* p_row = att + row * T;
  float weighted = 0.0f;
  for (int t2 = lane; t2 <= t; t2 += kWarp) weighted += to_float(p_row[t2]) * to_float(d_row[t2]);
  weighted = warp_sum(weighted);
  for (int t2 = lane; t2 < T; t2 += kWarp) {
    const float value =
        t2 <= t ? to_float(p_row[t2]) * (to_float(d_row[t2]) - weighted) * scale : 0.0f;
    d_row[t2] = from_float<F>(value);
  }
}

// For every qkv row of dqkv: part[kv] = Σ_{gi < group} (query columns)[kv·group + gi], summed in
// fp32 in head order, for the key or value columns at `part` (NH·HS or (NH + NKV)·HS). One thread
// per W consecutive elements of one key/value head (W = kPack<F> when HS and dqkv allow).
template <int W, typename F>
__global__ void group_sum_kernel(F* dqkv, std::size_t part, std::size_t count, Geometry g) {
  const int packs = g.HS / W;
  for (std::size_t at = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; at < count;
       at += std::size_t{gridDim.x} * blockDim.x) {
    const int i = static_cast<int>(at % packs) * W;
    const std::size_t head_row = at / packs;  // (b·T + t)·NKV + kv
    const int kv = static_cast<int>(head_row % g.NKV);
    F* row = dqkv + head_row / g.NKV * g.row();
    float sum[W] = {};
    for (int gi = 0; gi < g.group; ++gi) {
      const auto values = load_packed<W>(row + g.query(kv * g.group + gi) + i);
      for (int j = 0; j < W; ++j) sum[j] += values.get(j);
    }
    Packed<F, W> result;
    for (int j = 0; j < W; ++j) result.set(j, sum[j]);
    store_packed(row + part + static_cast<std::size_t>(kv) * g.HS + i, result);
  }
}

template <typename F>
void sum_groups(F* dqkv, std::size_t part, int B, const Geometry& g, cudaStream_t stream) {
  const std::size_t head_rows = static_cast<std::size_t>(B) * g.T * g.NKV;
  if (g.HS % kPack<F> == 0 && all_aligned_16(dqkv)) {
    constexpr int W = kPack<F>;
    const std::size_t count = head_rows * (g.HS / W);
    group_sum_kernel<W><<<grid_for(count), kBlockThreads, 0, stream>>>(dqkv, part, count, g);
  } else {
    const std::size_t count = head_rows * g.HS;
    group_sum_kernel<1><<<grid_for(count), kBlockThreads, 0, stream>>>(dqkv, part, count, g);
  }
  AT_CUDA_CHECK_LAUNCH();
}

unsigned matrix_row_blocks(long long rows) {
  return ceil_div(static_cast<std::size_t>(rows), kWarpsPerBlock);
}

// Element offsets of batch row b: position 0 in qkv and in out, and the [NH, T, T] block of att
// or scratch (head h at + h·T·T).
struct BatchRow {
  std::size_t qkv;  // offset of (b, t = 0) in qkv [B, T, (NH + 2·NKV)·HS]
  std::size_t out;  // offset of (b, t = 0) in out [B, T, NH·HS]
  std::size_t att;  // offset of (b, h = 0) in att [B, NH, T, T]
};

BatchRow batch_row(const Geometry& g, int b) {
  const auto bs = static_cast<std::size_t>(b);
  const auto T = static_cast<std::size_t>(g.T);
  return BatchRow{bs * T * g.row(), bs * T * g.out_row(), bs * g.NH * T * T};
}

// Per-head strides of the operands of one batch row, in elements, and the strides of one call's
// batch of query heads gi, group + gi, ...: query heads (in qkv, out, dout) and [T, T] blocks a
// whole group apart, key/value heads adjacent.
struct HeadStrides {
  long long hs;        // one head in a row of qkv or out
  long long tt;        // one [T, T] block of att or scratch
  long long group_hs;  // group query heads in a row
  long long group_tt;  // group [T, T] blocks
  int ld_qkv, ld_out;  // row widths of qkv and out
};

HeadStrides head_strides(const Geometry& g) {
  const long long hs = g.HS;
  const long long tt = static_cast<long long>(g.T) * g.T;
  return HeadStrides{
      hs, tt, g.group * hs, g.group * tt, static_cast<int>(g.row()), static_cast<int>(g.out_row())};
}

// Row-major Y_h = P_h·X (T×HS) for the query heads h of one batch row: P_h the [T, T] block of
// head h at p (att or scratch), X the rows of h's key/value head at x (values for O = P·V, keys
// for dQ = dS·K), Y_h head h's columns of the rows at y (out or dqkv, ld_y elements a row).
// Column-major that is Y_hᵀ = Xᵀ·P_hᵀ: X read column-major is Xᵀ (HS×T), op(A) = N; P read
// column-major is Pᵀ, op(B) = N. m = HS, n = T, k = T.
template <typename F>
void probabilities_times_heads(cublasHandle_t blas, const Geometry& g, const HeadStrides& s,
                               const F* p, const F* x, F* y, int ld_y) {
  for (int gi = 0; gi < g.group; ++gi) {
    heads_gemm<F>(blas, false, false, g.HS, g.T, g.T, 1.0f, Operand{x, s.ld_qkv, s.hs},
                  Operand{p + gi * s.tt, g.T, s.group_tt}, y + g.query(gi), ld_y, s.group_hs,
                  g.NKV);
  }
}

}  // namespace

void attention_prepare(cudaStream_t stream) {
  if (!attention_uses_reference()) cublas_on(stream);
}

// Per head (b, h), row-major: Q, K, V are T×HS with ld (NH + 2·NKV)·HS; att, scratch T×T with
// ld T; out, dout T×HS with ld NH·HS. b needs a second stride, hence the loop over b; the loop
// over gi picks the query heads that one call's batch of NKV key/value heads serves.
template <typename F>
void attention_forward_fast(F* out, F* att, const F* qkv, int B, int T, int NH, int NKV, int HS,
                            cudaStream_t stream) {
  const Geometry g = checked_geometry(B, T, NH, NKV, HS);
  const HeadStrides s = head_strides(g);
  cublasHandle_t blas = cublas_on(stream);
  for (int b = 0; b < B; ++b) {
    const BatchRow at = batch_row(g, b);
    const F* k = qkv + at.qkv + g.key(0);
    for (int gi = 0; gi < g.group; ++gi) {
      const F* q = qkv + at.qkv + g.query(gi);
      // Row-major S = scale·Q·Kᵀ (T×T) is column-major Sᵀ = scale·K·Qᵀ: K read column-major is
      // Kᵀ (HS×T), so op(A) = T; Q read column-major is Qᵀ (HS×T), op(B) = N. m = n = T, k = HS.
      heads_gemm<F>(blas, true, false, T, T, HS, g.scale, Operand{k, s.ld_qkv, s.hs},
                    Operand{q, s.ld_qkv, s.group_hs}, att + at.att + gi * s.tt, T, s.group_tt, NKV);
    }
  }
  const long long rows = static_cast<long long>(B) * NH * T;
  causal_softmax_kernel<<<matrix_row_blocks(rows), kBlockThreads, 0, stream>>>(att, rows, T);
  AT_CUDA_CHECK_LAUNCH();
  for (int b = 0; b < B; ++b) {
    const BatchRow at = batch_row(g, b);
    // O = P·V.
    probabilities_times_heads(blas, g, s, att + at.att, qkv + at.qkv + g.value(0), out + at.out,
                              s.ld_out);
  }
}

template <typename F>
void attention_backward_fast(F* dqkv, F* scratch, const F* dout, const F* qkv, const F* att, int B,
                             int T, int NH, int NKV, int HS, cudaStream_t stream) {
  const Geometry g = checked_geometry(B, T, NH, NKV, HS);
  const HeadStrides s = head_strides(g);
  cublasHandle_t blas = cublas_on(stream);
  // Where the per-query-head dv and dk products go: the key/value columns themselves when every
  // group has one query head, else the query columns, summed per group afterwards.
  const bool grouped = g.group > 1;
  const std::size_t dv_at = grouped ? g.query(0) : g.value(0);
  const std::size_t dk_at = grouped ? g.query(0) : g.key(0);
  for (int b = 0; b < B; ++b) {
    const BatchRow at = batch_row(g, b);
    const F* v = qkv + at.qkv + g.value(0);
    for (int gi = 0; gi < g.group; ++gi) {
      // Row-major dP = dO·Vᵀ (T×T, into scratch) is column-major dPᵀ = V·dOᵀ: V read
      // column-major is Vᵀ, op(A) = T; dO read column-major is dOᵀ (HS×T, ld NH·HS), op(B) = N.
      // m = n = T, k = HS.
      heads_gemm<F>(
          blas, true, false, T, T, HS, 1.0f, Operand{v, s.ld_qkv, s.hs},
          Operand{dout + at.out + static_cast<std::size_t>(gi) * HS, s.ld_out, s.group_hs},
          scratch + at.att + gi * s.tt, T, s.group_tt, NKV);
    }
    // Row-major dV_h = P_hᵀ·dO_h (T×HS, ld of qkv) is column-major dV_hᵀ = dOᵀ·P: dO read
    // column-major is dOᵀ, op(A) = N; P read column-major is Pᵀ, op(B) = T. m = HS, n = T, k = T.
    heads_gemm<F>(blas, false, true, HS, T, T, 1.0f, Operand{dout + at.out, s.ld_out, s.hs},
                  Operand{att + at.att, T, s.tt}, dqkv + at.qkv + dv_at, s.ld_qkv, s.hs, NH);
  }
  if (grouped) sum_groups(dqkv, g.value(0), B, g, stream);
  const long long rows = static_cast<long long>(B) * NH * T;
  causal_softmax_backward_kernel<<<matrix_row_blocks(rows), kBlockThreads, 0, stream>>>(
      scratch, att, rows, T, g.scale);
  AT_CUDA_CHECK_LAUNCH();
  for (int b = 0; b < B; ++b) {
    const BatchRow at = batch_row(g, b);
    // Row-major dK_h = dS_hᵀ·Q_h (T×HS, ld of qkv) is column-major dK_hᵀ = Qᵀ·dS: Q read
    // column-major is Qᵀ, op(A) = N; dS read column-major is dSᵀ, op(B) = T. m = HS, n = T,
    // k = T.
    heads_gemm<F>(blas, false, true, HS, T, T, 1.0f, Operand{qkv + at.qkv, s.ld_qkv, s.hs},
                  Operand{scratch + at.att, T, s.tt}, dqkv + at.qkv + dk_at, s.ld_qkv, s.hs, NH);
  }
  if (grouped) sum_groups(dqkv, g.key(0), B, g, stream);
  for (int b = 0; b < B; ++b) {
    const BatchRow at = batch_row(g, b);
    // dQ = dS·K, with dS = d(q·k), zero above the diagonal.
    probabilities_times_heads(blas, g, s, scratch + at.att, qkv + at.qkv + g.key(0), dqkv + at.qkv,
                              s.ld_qkv);
  }
}

#define AT_ATTENTION_FAST(F)                                                                    \
  template void attention_forward_fast<F>(F*, F*, const F*, int, int, int, int, int,            \
                                          cudaStream_t);                                        \
  template void attention_backward_fast<F>(F*, F*, const F*, const F*, const F*, int, int, int, \
                                           int, int, cudaStream_t);
AT_GPU_INSTANTIATE(AT_ATTENTION_FAST)

}  // namespace autotrain::kernels::gpu
