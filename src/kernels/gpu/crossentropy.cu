// Fused softmax + cross-entropy forward and backward on the device, over a padded vocabulary.
// Invariant: dlogits is overwritten (=); padded columns v >= V are never read and get gradient 0.
// The softmax is not stored: forward keeps each row's log-sum-exp (fp32), backward recomputes
// exp(logit - lse) while it writes the gradient in place.
#include <cmath>

#include "autotrain/kernels/gpu/crossentropy.hpp"
#include "common.cuh"

namespace autotrain::kernels::gpu {
namespace {

// Running (max, Σ exp(x - max)) pair; merging two is exact up to rounding.
struct SoftmaxSum {
  float max;
  float sum;
};

__device__ __forceinline__ SoftmaxSum merge(SoftmaxSum a, SoftmaxSum b) {
  const float m = fmaxf(a.max, b.max);
  if (m == -INFINITY) return {m, 0.0f};  // both empty: avoid exp(-inf - -inf) = NaN
  return {m, a.sum * expf(a.max - m) + b.sum * expf(b.max - m)};
}

// Adds a pack's (max, sum) to the running pair with one exp: the larger max stays as is.
__device__ __forceinline__ void add_pack(SoftmaxSum& acc, float max, float sum) {
  if (max > acc.max) {
    acc.sum = acc.sum * expf(acc.max - max) + sum;  // exp(-inf) = 0 for an empty acc
    acc.max = max;
  } else {
    acc.sum += sum * expf(max - acc.max);
  }
}

// One block per row, W columns per access (kPack<F> when Vp allows 16-byte rows, else 1). Each
// thread folds packs p = threadIdx.x, + kBlockThreads, ...: the pack's max first, then Σ exp over
// the pack against it, then one merge: 1 + 1/W exp per element. Columns v >= V are skipped. The
// block merges the threads' pairs (warp shuffles, then one pair per warp through shared memory).
template <int W, typename F>
__global__ void crossentropy_forward_kernel(float* losses, float* lse, const F* logits,
                                            const std::int32_t* targets, int V, int Vp) {
  __shared__ SoftmaxSum per_warp[kBlockThreads / kWarp];
  const std::size_t n = blockIdx.x;
  const F* x = logits + n * Vp;
  SoftmaxSum acc{-INFINITY, 0.0f};
  const int packs = (V + W - 1) / W;  // packs holding at least one real column
  for (int p = static_cast<int>(threadIdx.x); p < packs; p += kBlockThreads) {
    const auto values = load_packed<W>(x + p * W);
    const int real = V - p * W < W ? V - p * W : W;  // only the last pack is partial
    float pack_max = -INFINITY;
    for (int k = 0; k < W; ++k) {
      if (k < real) pack_max = fmaxf(pack_max, values.get(k));
    }
    if (pack_max == -INFINITY) continue;  // all -inf: adds nothing (and exp(-inf + inf) is NaN)
    float pack_sum = 0.0f;
    for (int k = 0; k < W; ++k) {
      if (k < real) pack_sum += expf(values.get(k) - pack_max);
    }
    add_pack(acc, pack_max, pack_sum);
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    const SoftmaxSum other{__shfl_xor_sync(0xffffffffu, acc.max, offset),
                           __shfl_xor_sync(0xffffffffu, acc.sum, offset)};
    acc = merge(acc, other);
  }
  const int warp = static_cast<int>(threadIdx.x) / kWarp;
  if (threadIdx.x % kWarp == 0) per_warp[warp] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    SoftmaxSum total = per_warp[0];
    for (int w = 1; w < kBlockThreads / kWarp; ++w) total = merge(total, per_warp[w]);
    const float row_lse = total.max + logf(total.sum);
    lse[n] = row_lse;
    losses[n] = targets[n] == kIgnoreTarget ? 0.0f : row_lse - to_float(x[targets[n]]);
  }
}

// One block per row of dlogits [N, Vp], W columns per access: no per-element index division.
// In place is safe: each pack is read, then written, by the same thread.
template <int W, typename F>
__global__ void crossentropy_backward_kernel(F* dlogits, const F* logits, const float* lse,
                                             const std::int32_t* targets, float scalar_dloss,
                                             const float* row_scale, int V, int Vp, float cap) {
  const std::size_t n = blockIdx.x;
  const float dloss = row_scale != nullptr ? scalar_dloss * row_scale[n] : scalar_dloss;
  const F* x = logits + n * Vp;
  F* dx = dlogits + n * Vp;
  const float row_lse = lse[n];
  const int target = targets[n];
  for (int p = static_cast<int>(threadIdx.x); p < Vp / W; p += kBlockThreads) {
    const auto values = load_packed<W>(x + p * W);
    Packed<F, W> grad;
    for (int k = 0; k < W; ++k) {
      const int v = p * W + k;
      float d = 0.0f;
      if (v < V && target != kIgnoreTarget) {
        d = expf(values.get(k) - row_lse) * dloss;
        if (v == target) d -= dloss;
        if (cap > 0.0f) {  // the logits are soft-capped: times d(cap·tanh(z/cap))/dz
          const float c = values.get(k) / cap;
          d *= 1.0f - c * c;
        }
      }
      grad.set(k, d);
    }
    store_packed(dx + p * W, grad);
  }
}

// logits[n, v] = cap · tanh(logits[n, v] / cap) for v < V; one thread per element.
template <typename F>
__global__ void logit_softcap_kernel(F* logits, std::size_t count, int V, int Vp, float cap) {
  for (std::size_t at = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; at < count;
       at += std::size_t{gridDim.x} * blockDim.x) {
    if (static_cast<int>(at % static_cast<std::size_t>(Vp)) >= V) continue;
    logits[at] = from_float<F>(cap * tanhf(to_float(logits[at]) / cap));
  }
}

}  // namespace

template <typename F>
void logit_softcap(F* logits, std::size_t N, int V, int Vp, float cap, cudaStream_t stream) {
  const std::size_t count = N * static_cast<std::size_t>(Vp);
  if (count == 0) return;
  logit_softcap_kernel<<<grid_for(count), kBlockThreads, 0, stream>>>(logits, count, V, Vp, cap);
  AT_CUDA_CHECK_LAUNCH();
}

template <typename F>
void crossentropy_forward(float* losses, float* lse, const F* logits, const std::int32_t* targets,
                          std::size_t N, int V, int Vp, cudaStream_t stream) {
  AT_CHECK(V >= 1 && V <= Vp, "crossentropy: vocabulary size ", V, " must be in [1, Vp = ", Vp,
           "]");
  if (N == 0) return;
  AT_CHECK(N <= 0x7fffffffu, "crossentropy: ", N, " rows exceed one grid");
  const auto rows = static_cast<unsigned>(N);
  if (rows_packable<F>(static_cast<std::size_t>(Vp), logits)) {
    crossentropy_forward_kernel<kPack<F>>
        <<<rows, kBlockThreads, 0, stream>>>(losses, lse, logits, targets, V, Vp);
  } else {
    crossentropy_forward_kernel<1>
        <<<rows, kBlockThreads, 0, stream>>>(losses, lse, logits, targets, V, Vp);
  }
  AT_CUDA_CHECK_LAUNCH();
}

template <typename F>
void crossentropy_backward(F* dlogits, const F* logits, const float* lse,
                           const std::int32_t* targets, float dloss, std::size_t N, int V, int Vp,
                           cudaStream_t stream, float softcap, const float* row_scale) {
  AT_CHECK(V >= 1 && V <= Vp, "crossentropy: vocabulary size ", V, " must be in [1, Vp = ", Vp,
           "]");
  if (N == 0) return;
  AT_CHECK(N <= 0x7fffffffu, "crossentropy: ", N, " rows exceed one grid");
  const auto rows = static_cast<unsigned>(N);
  if (rows_packable<F>(static_cast<std::size_t>(Vp), logits, dlogits)) {
    crossentropy_backward_kernel<kPack<F>><<<rows, kBlockThreads, 0, stream>>>(
        dlogits, logits, lse, targets, dloss, row_scale, V, Vp, softcap);
  } else {
    crossentropy_backward_kernel<1><<<rows, kBlockThreads, 0, stream>>>(
        dlogits, logits, lse, targets, dloss, row_scale, V, Vp, softcap);
  }
  AT_CUDA_CHECK_LAUNCH();
}

#define AT_CROSSENTROPY(F)                                                                       \
  template void crossentropy_forward<F>(float*, float*, const F*, const std::int32_t*,           \
                                        std::size_t, int, int, cudaStream_t);                    \
  template void crossentropy_backward<F>(F*, const F*, const float*, const std::int32_t*, float, \
                                         std::size_t, int, int, cudaStream_t, float,             \
                                         const float*);                                          \
  template void logit_softcap<F>(F*, std::size_t, int, int, float, cudaStream_t);
AT_GPU_INSTANTIATE(AT_CROSSENTROPY)

}  // namespace autotrain::kernels::gpu
