// Causal multi-head attention forward and backward on the device (the part between the qkv and
// output projections). Two paths with one contract (see the header):
// - fast: per batch row b, cuBLAS strided-batched gemms over the NH heads (tensor cores, fp32
//   accumulation) and fused causal softmax kernels, one warp per (b, h, t) row, fp32 math.
// - reference: one warp owns one (b, h, t) row and computes it from global memory in fp32; it
//   writes only that row's outputs, so no two warps share an output and no atomics are needed.
// Invariant: dqkv is overwritten (=); every element of dq, dk and dv is written exactly once.
// Shapes as in the header; HS = C / NH; qkv row (b, t) holds q | k | v, each [NH, HS].
#include <cublas_v2.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <string>

#include "autotrain/core/log.hpp"
#include "autotrain/kernels/gpu/attention.hpp"
#include "autotrain/kernels/gpu/cublas_check.hpp"
#include "common.cuh"

namespace autotrain::kernels::gpu {
namespace {

constexpr int kWarpsPerBlock = kBlockThreads / kWarp;

struct Geometry {
  int T;
  int C;
  int NH;
  int HS;
  float scale;    // 1 / sqrt(HS)
  int first = 0;  // the reference forward's first row (attention_forward_rows); 0 elsewhere
};

// Rows t >= first of each (b, h): the rows att and out hold.
__host__ __device__ __forceinline__ int held_rows(const Geometry& g) {
  return g.T - g.first;
}

// The (b, h, t) of this warp's row, or false past the last row.
__device__ __forceinline__ bool warp_row(const Geometry& g, int B, int& b, int& h, int& t) {
  const long long row = static_cast<long long>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarp;
  if (row >= static_cast<long long>(B) * g.NH * held_rows(g)) return false;
  t = g.first + static_cast<int>(row % held_rows(g));
  const long long bh = row / held_rows(g);
  h = static_cast<int>(bh % g.NH);
  b = static_cast<int>(bh / g.NH);
  return true;
}

// Offset of part (0 q, 1 k, 2 v) of head h at position (b, t) in qkv [B, T, 3C].
__device__ __forceinline__ std::size_t qkv_at(const Geometry& g, int b, int t, int h, int part) {
  return (static_cast<std::size_t>(b) * g.T + t) * 3 * g.C + static_cast<std::size_t>(part) * g.C +
         static_cast<std::size_t>(h) * g.HS;
}

// Offset of row (b, h, t) of att [B, NH, T - first, T].
__device__ __forceinline__ std::size_t att_at(const Geometry& g, int b, int h, int t) {
  return ((static_cast<std::size_t>(b) * g.NH + h) * held_rows(g) + (t - g.first)) * g.T;
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

  SoftmaxStats stats;
  for (int t2 = lane; t2 <= t; t2 += kWarp) stats.add(dot(q, qkv + qkv_at(g, b, t2, h, 1), g.HS));
  stats.warp_merge();
  const float row_max = stats.max;
  const float inv_sum = 1.0f / stats.sum;
  F* p_row = att + att_at(g, b, h, t);
  for (int t2 = lane; t2 < g.T; t2 += kWarp) {
    float p = 0.0f;
    if (t2 <= t) p = expf(dot(q, qkv + qkv_at(g, b, t2, h, 1), g.HS) - row_max) * inv_sum;
    p_row[t2] = from_float<F>(p);
  }
  __syncwarp();  // the row's probabilities, written by all lanes, are read by all lanes below

  F* o = out + (static_cast<std::size_t>(b) * held_rows(g) + (t - g.first)) * g.C +
         static_cast<std::size_t>(h) * g.HS;
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
  return ceil_div(static_cast<std::size_t>(B) * g.NH * held_rows(g), kWarpsPerBlock);
}

std::size_t staged_bytes(const Geometry& g) {
  return sizeof(float) * static_cast<std::size_t>(kWarpsPerBlock) * g.HS;
}

// ---- fast path -------------------------------------------------------------------------------

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

// Column-major, batched over the NH heads of one batch row, beta = 0 (c is overwritten, never
// read): c_i (m×n, ldc) = alpha · op(a_i) (m×k) · op(b_i) (k×n), x_i = x + i·stride_x.
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

unsigned matrix_row_blocks(long long rows) {
  return ceil_div(static_cast<std::size_t>(rows), kWarpsPerBlock);
}

// Element offsets of batch row b: q of head 0 in qkv (k at + C, v at + 2C, head h at + h·HS,
// row stride 3C), head 0 in out (head h at + h·HS, row stride C) and the [NH, T, T] block of att
// or scratch (head h at + h·T·T).
struct BatchRow {
  std::size_t qkv;  // offset of (b, t = 0) in qkv [B, T, 3C]
  std::size_t out;  // offset of (b, t = 0) in out [B, T, C]
  std::size_t att;  // offset of (b, h = 0) in att [B, NH, T, T]
};

BatchRow batch_row(const Geometry& g, int b) {
  const auto bs = static_cast<std::size_t>(b);
  const auto T = static_cast<std::size_t>(g.T);
  return BatchRow{bs * T * 3 * g.C, bs * T * g.C, bs * g.NH * T * T};
}

AttentionKind kind_from_environment() {
  const char* value = std::getenv("AUTOTRAIN_CUDA_ATTENTION");
  const std::string choice = value == nullptr ? "" : value;
  AT_CHECK(choice.empty() || choice == "fast" || choice == "reference" || choice == "flash",
           "AUTOTRAIN_CUDA_ATTENTION = '", choice,
           "': expected 'fast' (the cuBLAS path, also when unset), 'flash' (flash attention in "
           "bf16/fp16) or 'reference' (the slow reference kernels)");
  if (choice == "reference") {
    log::info(
        "attention: AUTOTRAIN_CUDA_ATTENTION=reference, using the slow reference CUDA "
        "attention kernels");
    return AttentionKind::reference;
  }
  if (choice == "flash") {
    log::info(
        "attention: AUTOTRAIN_CUDA_ATTENTION=flash, using flash attention where the precision "
        "is bf16/fp16 and the head size a multiple of 16 up to 64 (the fast path elsewhere)");
    return AttentionKind::flash;
  }
  return AttentionKind::fast;
}

}  // namespace

void attention_prepare(cudaStream_t stream) {
  if (!attention_uses_reference()) cublas_on(stream);
}

AttentionKind attention_kind() {
  static const AttentionKind kind = kind_from_environment();
  return kind;
}

bool attention_uses_reference() {
  return attention_kind() == AttentionKind::reference;
}

template <typename F>
void attention_forward_reference(F* out, F* att, const F* qkv, int B, int T, int C, int NH,
                                 cudaStream_t stream) {
  attention_forward_rows(out, att, qkv, B, T, 0, C, NH, stream);
}

template <typename F>
void attention_forward_rows(F* out, F* att, const F* qkv, int B, int T, int first, int C, int NH,
                            cudaStream_t stream) {
  Geometry g = checked_geometry(B, T, C, NH);
  AT_CHECK(first >= 0 && first < T, "attention: first row ", first, " is not a row of T = ", T);
  g.first = first;
  attention_forward_kernel<<<row_blocks(B, g), kBlockThreads, staged_bytes(g), stream>>>(out, att,
                                                                                         qkv, B, g);
  AT_CUDA_CHECK_LAUNCH();
}

template <typename F>
void attention_backward_reference(F* dqkv, F* scratch, const F* dout, const F* qkv, const F* att,
                                  int B, int T, int C, int NH, cudaStream_t stream) {
  const Geometry g = checked_geometry(B, T, C, NH);
  attention_dpre_kernel<<<row_blocks(B, g), kBlockThreads, staged_bytes(g), stream>>>(
      scratch, dout, qkv, att, B, g);
  AT_CUDA_CHECK_LAUNCH();
  attention_dqkv_kernel<<<row_blocks(B, g), kBlockThreads, 0, stream>>>(dqkv, scratch, dout, qkv,
                                                                        att, B, g);
  AT_CUDA_CHECK_LAUNCH();
}

// Per head (b, h), row-major: Q, K, V are T×HS with ld 3C; att, scratch T×T with ld T; out,
// dout T×HS with ld C. Heads of one b are HS apart in qkv / out and T·T apart in att, so the NH
// heads are one strided batch; b needs a second stride, hence the loop over b.
template <typename F>
void attention_forward_fast(F* out, F* att, const F* qkv, int B, int T, int C, int NH,
                            cudaStream_t stream) {
  const Geometry g = checked_geometry(B, T, C, NH);
  cublasHandle_t blas = cublas_on(stream);
  const int ld_qkv = 3 * C;
  const long long hs = g.HS;
  const long long tt = static_cast<long long>(T) * T;
  for (int b = 0; b < B; ++b) {
    const BatchRow at = batch_row(g, b);
    const F* q = qkv + at.qkv;
    const F* k = q + C;
    // Row-major S = scale·Q·Kᵀ (T×T) is column-major Sᵀ = scale·K·Qᵀ: K read column-major is Kᵀ
    // (HS×T), so op(A) = T; Q read column-major is Qᵀ (HS×T), op(B) = N. m = n = T, k = HS.
    heads_gemm<F>(blas, true, false, T, T, g.HS, g.scale, Operand{k, ld_qkv, hs},
                  Operand{q, ld_qkv, hs}, att + at.att, T, tt, NH);
  }
  const long long rows = static_cast<long long>(B) * NH * T;
  causal_softmax_kernel<<<matrix_row_blocks(rows), kBlockThreads, 0, stream>>>(att, rows, T);
  AT_CUDA_CHECK_LAUNCH();
  for (int b = 0; b < B; ++b) {
    const BatchRow at = batch_row(g, b);
    const F* v = qkv + at.qkv + 2 * static_cast<std::size_t>(C);
    // Row-major O = P·V (T×HS) is column-major Oᵀ = Vᵀ·Pᵀ: V read column-major is Vᵀ (HS×T),
    // op(A) = N; P read column-major is Pᵀ, op(B) = N. m = HS, n = T, k = T; Oᵀ has ld C.
    heads_gemm<F>(blas, false, false, g.HS, T, T, 1.0f, Operand{v, ld_qkv, hs},
                  Operand{att + at.att, T, tt}, out + at.out, C, hs, NH);
  }
}

template <typename F>
void attention_backward_fast(F* dqkv, F* scratch, const F* dout, const F* qkv, const F* att, int B,
                             int T, int C, int NH, cudaStream_t stream) {
  const Geometry g = checked_geometry(B, T, C, NH);
  cublasHandle_t blas = cublas_on(stream);
  const int ld_qkv = 3 * C;
  const long long hs = g.HS;
  const long long tt = static_cast<long long>(T) * T;
  for (int b = 0; b < B; ++b) {
    const BatchRow at = batch_row(g, b);
    const F* v = qkv + at.qkv + 2 * static_cast<std::size_t>(C);
    const F* d_o = dout + at.out;
    // Row-major dP = dO·Vᵀ (T×T, into scratch) is column-major dPᵀ = V·dOᵀ: V read
    // column-major is Vᵀ, op(A) = T; dO read column-major is dOᵀ (HS×T, ld C), op(B) = N.
    // m = n = T, k = HS.
    heads_gemm<F>(blas, true, false, T, T, g.HS, 1.0f, Operand{v, ld_qkv, hs}, Operand{d_o, C, hs},
                  scratch + at.att, T, tt, NH);
    // Row-major dV = Pᵀ·dO (T×HS, ld 3C) is column-major dVᵀ = dOᵀ·P: dO read column-major is
    // dOᵀ, op(A) = N; P read column-major is Pᵀ, op(B) = T. m = HS, n = T, k = T.
    heads_gemm<F>(blas, false, true, g.HS, T, T, 1.0f, Operand{d_o, C, hs},
                  Operand{att + at.att, T, tt}, dqkv + at.qkv + 2 * static_cast<std::size_t>(C),
                  ld_qkv, hs, NH);
  }
  const long long rows = static_cast<long long>(B) * NH * T;
  causal_softmax_backward_kernel<<<matrix_row_blocks(rows), kBlockThreads, 0, stream>>>(
      scratch, att, rows, T, g.scale);
  AT_CUDA_CHECK_LAUNCH();
  for (int b = 0; b < B; ++b) {
    const BatchRow at = batch_row(g, b);
    const F* q = qkv + at.qkv;
    const F* k = q + C;
    const F* ds = scratch + at.att;  // dS = d(q·k), zero above the diagonal
    // Row-major dQ = dS·K (T×HS, ld 3C) is column-major dQᵀ = Kᵀ·dSᵀ: K read column-major is Kᵀ,
    // op(A) = N; dS read column-major is dSᵀ, op(B) = N. m = HS, n = T, k = T.
    heads_gemm<F>(blas, false, false, g.HS, T, T, 1.0f, Operand{k, ld_qkv, hs}, Operand{ds, T, tt},
                  dqkv + at.qkv, ld_qkv, hs, NH);
    // Row-major dK = dSᵀ·Q (T×HS, ld 3C) is column-major dKᵀ = Qᵀ·dS: Q read column-major is Qᵀ,
    // op(A) = N; dS read column-major is dSᵀ, op(B) = T. m = HS, n = T, k = T.
    heads_gemm<F>(blas, false, true, g.HS, T, T, 1.0f, Operand{q, ld_qkv, hs}, Operand{ds, T, tt},
                  dqkv + at.qkv + static_cast<std::size_t>(C), ld_qkv, hs, NH);
  }
}

template <typename F>
void attention_forward(F* out, F* att, const F* qkv, int B, int T, int C, int NH,
                       cudaStream_t stream) {
  if (attention_uses_reference()) {
    attention_forward_reference(out, att, qkv, B, T, C, NH, stream);
  } else {
    attention_forward_fast(out, att, qkv, B, T, C, NH, stream);
  }
}

template <typename F>
void attention_backward(F* dqkv, F* scratch, const F* dout, const F* qkv, const F* att, int B,
                        int T, int C, int NH, cudaStream_t stream) {
  if (attention_uses_reference()) {
    attention_backward_reference(dqkv, scratch, dout, qkv, att, B, T, C, NH, stream);
  } else {
    attention_backward_fast(dqkv, scratch, dout, qkv, att, B, T, C, NH, stream);
  }
}

#define AT_ATTENTION_PATH(F, SUFFIX)                                                               \
  template void attention_forward##SUFFIX<F>(F*, F*, const F*, int, int, int, int, cudaStream_t);  \
  template void attention_backward##SUFFIX<F>(F*, F*, const F*, const F*, const F*, int, int, int, \
                                              int, cudaStream_t);
#define AT_ATTENTION(F)            \
  AT_ATTENTION_PATH(F, )           \
  AT_ATTENTION_PATH(F, _fast)      \
  AT_ATTENTION_PATH(F, _reference) \
  template void attention_forward_rows<F>(F*, F*, const F*, int, int, int, int, int, cudaStream_t);
AT_GPU_INSTANTIATE(AT_ATTENTION)

}  // namespace autotrain::kernels::gpu
