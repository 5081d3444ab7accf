// Fused softmax + cross-entropy forward and backward on the device, over a padded vocabulary.
// Invariant: dlogits is overwritten (=); padded columns v >= V are never read and get gradient 0.
// The softmax is not stored: forward keeps each row's log-sum-exp (fp32), backward recomputes
// exp(logit - lse) while it writes the gradient in place.
#include <cmath>

#include "autotrain/kernels/cuda/crossentropy.hpp"
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

// One block per row: each thread folds a strided slice of the V real columns, then the block
// merges the threads' pairs (warp shuffles, then one value per warp through shared memory).
template <typename F>
__global__ void crossentropy_forward_kernel(float* losses, float* lse, const F* logits,
                                            const std::int32_t* targets, int V, int Vp) {
  __shared__ SoftmaxSum per_warp[kBlockThreads / kWarp];
  const std::size_t n = blockIdx.x;
  const F* x = logits + n * Vp;
  SoftmaxSum acc{-INFINITY, 0.0f};
  for (int v = static_cast<int>(threadIdx.x); v < V; v += kBlockThreads) {
    acc = merge(acc, SoftmaxSum{to_float(x[v]), 1.0f});
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
    losses[n] = row_lse - to_float(x[targets[n]]);
  }
}

// One thread per element of dlogits [N, Vp]; in place is safe (each element read, then written,
// by the same thread).
template <typename F>
__global__ void crossentropy_backward_kernel(F* dlogits, const F* logits, const float* lse,
                                             const std::int32_t* targets, float dloss, int V,
                                             int Vp, std::size_t total) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < total;
       i += std::size_t{gridDim.x} * blockDim.x) {
    const std::size_t n = i / Vp;
    const int v = static_cast<int>(i % Vp);
    float d = 0.0f;
    if (v < V) {
      d = expf(to_float(logits[i]) - lse[n]) * dloss;
      if (v == targets[n]) d -= dloss;
    }
    dlogits[i] = from_float<F>(d);
  }
}

}  // namespace

template <typename F>
void crossentropy_forward(float* losses, float* lse, const F* logits, const std::int32_t* targets,
                          std::size_t N, int V, int Vp, cudaStream_t stream) {
  AT_CHECK(V >= 1 && V <= Vp, "crossentropy: vocabulary size ", V, " must be in [1, Vp = ", Vp,
           "]");
  if (N == 0) return;
  AT_CHECK(N <= 0x7fffffffu, "crossentropy: ", N, " rows exceed one grid");
  crossentropy_forward_kernel<<<static_cast<unsigned>(N), kBlockThreads, 0, stream>>>(
      losses, lse, logits, targets, V, Vp);
  AT_CUDA_CHECK_LAUNCH();
}

template <typename F>
void crossentropy_backward(F* dlogits, const F* logits, const float* lse,
                           const std::int32_t* targets, float dloss, std::size_t N, int V, int Vp,
                           cudaStream_t stream) {
  AT_CHECK(V >= 1 && V <= Vp, "crossentropy: vocabulary size ", V, " must be in [1, Vp = ", Vp,
           "]");
  const std::size_t total = N * static_cast<std::size_t>(Vp);
  if (total == 0) return;
  crossentropy_backward_kernel<<<grid_for(total), kBlockThreads, 0, stream>>>(
      dlogits, logits, lse, targets, dloss, V, Vp, total);
  AT_CUDA_CHECK_LAUNCH();
}

#define AT_CROSSENTROPY(F)                                                                       \
  template void crossentropy_forward<F>(float*, float*, const F*, const std::int32_t*,           \
                                        std::size_t, int, int, cudaStream_t);                    \
  template void crossentropy_backward<F>(F*, const F*, const float*, const std::int32_t*, float, \
                                         std::size_t, int, int, cudaStream_t);
AT_GPU_INSTANTIATE(AT_CROSSENTROPY)

}  // namespace autotrain::kernels::gpu
