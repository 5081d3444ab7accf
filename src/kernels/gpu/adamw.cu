// AdamW on the device over fp32 master weights and fp32 moments, the update of
// optim/optimizer.cpp element for element (decoupled weight decay on the pre-update weight).
// With mixed precision the same pass writes the bf16/fp16 compute copy of each updated weight.
// And the 8-bit AdamW (adamw_8bit_update): blockwise 8-bit moments, one CUDA block a state block.
#include <cmath>

#include "autotrain/kernels/gpu/adamw.hpp"
#include "common.cuh"

namespace autotrain::kernels::gpu {
namespace {

// W elements per thread and step: W = kPack<G> (8 for bf16/fp16: one 128-bit access of the
// compute copy, two of each fp32 array) or 1 on the scalar path. packs = count / W.
template <int W, typename G>
__global__ void adamw_kernel(float* params, G* params_copy, const float* grads, float* m, float* v,
                             std::size_t packs, float lr, float beta1, float beta2, float eps,
                             float weight_decay, float grad_scale, float correction1,
                             float correction2) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < packs;
       i += std::size_t{gridDim.x} * blockDim.x) {
    const auto g = load_packed<W>(grads + i * W);
    auto p = load_packed<W>(params + i * W);
    auto mp = load_packed<W>(m + i * W);
    auto vp = load_packed<W>(v + i * W);
    Packed<G, W> copy;
    for (int k = 0; k < W; ++k) {
      const float grad = g.get(k) * grad_scale;
      const float mi = beta1 * mp.values[k] + (1.0f - beta1) * grad;
      const float vi = beta2 * vp.values[k] + (1.0f - beta2) * grad * grad;
      mp.values[k] = mi;
      vp.values[k] = vi;
      const float m_hat = mi / correction1;
      const float v_hat = vi / correction2;
      const float old = p.values[k];
      const float updated = old - lr * (m_hat / (sqrtf(v_hat) + eps) + weight_decay * old);
      p.values[k] = updated;
      copy.set(k, updated);
    }
    store_packed(m + i * W, mp);
    store_packed(v + i * W, vp);
    store_packed(params + i * W, p);
    if (params_copy != nullptr) store_packed(params_copy + i * W, copy);
  }
}

constexpr int kThreads8bit = 256;
constexpr int kPerThread8bit = static_cast<int>(kAdamW8bitBlock) / kThreads8bit;

// The code of the entry of `map` (256, sorted) nearest to x: the CPU's quantize_nearest.
__device__ __forceinline__ std::uint8_t nearest_code(const float* map, float x) {
  unsigned low = 0;
  for (unsigned step = 128; step > 0; step >>= 1) low += map[low + step] <= x ? step : 0;
  const unsigned high = low < 255 ? low + 1 : 255;
  return static_cast<std::uint8_t>(map[high] - x < x - map[low] ? high : low);
}

// The largest value of every thread's `x` in the block (kThreads8bit threads), on every thread.
__device__ __forceinline__ float block_max(float x, float* per_warp) {
  x = warp_max(x);
  const int warp = static_cast<int>(threadIdx.x) / kWarp;
  if (threadIdx.x % kWarp == 0) per_warp[warp] = x;
  __syncthreads();
  float result = per_warp[0];
  for (int w = 1; w < kThreads8bit / kWarp; ++w) result = fmaxf(result, per_warp[w]);
  __syncthreads();  // per_warp is reused by the next reduction
  return result;
}

// One CUDA block per state block; thread t takes elements t, t + 256, ... of it (coalesced).
template <typename G>
__global__ void adamw_8bit_kernel(float* params, G* params_copy, const float* grads,
                                  std::uint8_t* m, std::uint8_t* v, float* m_absmax,
                                  float* v_absmax, std::size_t count, const AdamW8bitRun* runs,
                                  int run_count, const float* maps, float lr, float beta1,
                                  float beta2, float eps, float weight_decay, float grad_scale,
                                  float correction1, float correction2) {
  __shared__ float map[512];  // signed (m), then unsigned (v)
  __shared__ float per_warp[kThreads8bit / kWarp];
  for (int i = static_cast<int>(threadIdx.x); i < 512; i += kThreads8bit) map[i] = maps[i];
  __syncthreads();
  const std::size_t block = blockIdx.x;
  const std::size_t first = block * kAdamW8bitBlock;
  const float m_scale = m_absmax[block], v_scale = v_absmax[block];
  float m_new[kPerThread8bit], v_new[kPerThread8bit];
  float m_max = 0.0f, v_max = 0.0f;
  for (int k = 0; k < kPerThread8bit; ++k) {
    const std::size_t i = first + static_cast<std::size_t>(k * kThreads8bit) + threadIdx.x;
    m_new[k] = 0.0f;
    v_new[k] = 0.0f;
    if (i >= count) continue;
    // The run holding i: the last that begins at or before it.
    int lo = 0, hi = run_count;
    while (hi - lo > 1) {
      const int mid = (lo + hi) / 2;
      (runs[mid].begin <= i ? lo : hi) = mid;
    }
    if (run_count == 0 || i < runs[lo].begin || i >= runs[lo].end) continue;  // padding
    const float decay = runs[lo].decay ? weight_decay : 0.0f;
    const float grad = grads[i] * grad_scale;
    const float mi = fmaf(beta1, map[m[i]] * m_scale, (1.0f - beta1) * grad);
    const float vi = fmaf(beta2, map[256 + v[i]] * v_scale, ((1.0f - beta2) * grad) * grad);
    const float step = (mi / correction1) / (sqrtf(vi / correction2) + eps);
    const float old = params[i];
    const float updated = fmaf(-lr, fmaf(decay, old, step), old);
    params[i] = updated;
    if (params_copy != nullptr) params_copy[i] = from_float<G>(updated);
    m_new[k] = mi;
    v_new[k] = vi;
    m_max = fmaxf(m_max, fabsf(mi));
    v_max = fmaxf(v_max, fabsf(vi));
  }
  // Every thread has read the old absmaxes before thread 0 writes the new ones (the barriers).
  const float m_block = block_max(m_max, per_warp);
  const float v_block = block_max(v_max, per_warp);
  const float m_divisor = m_block > 0.0f ? m_block : 1.0f;
  const float v_divisor = v_block > 0.0f ? v_block : 1.0f;
  for (int k = 0; k < kPerThread8bit; ++k) {
    const std::size_t i = first + static_cast<std::size_t>(k * kThreads8bit) + threadIdx.x;
    if (i >= count) continue;
    m[i] = nearest_code(map, m_new[k] / m_divisor);
    v[i] = nearest_code(map + 256, v_new[k] / v_divisor);
  }
  if (threadIdx.x == 0) {
    m_absmax[block] = m_block;
    v_absmax[block] = v_block;
  }
}

}  // namespace

template <typename G>
void adamw_8bit_update(float* params, G* params_copy, const float* grads, std::uint8_t* m,
                       std::uint8_t* v, float* m_absmax, float* v_absmax, std::size_t count,
                       const AdamW8bitRun* runs, int run_count, const float* maps,
                       const AdamWSettings& settings, cudaStream_t stream) {
  AT_CHECK(settings.step >= 1, "adamw_8bit_update: step must count from 1, got ", settings.step);
  if (count == 0) return;
  const auto correction = [&](float beta) {
    return static_cast<float>(1.0 - std::pow(double{beta}, static_cast<double>(settings.step)));
  };
  const auto blocks = static_cast<unsigned>((count + kAdamW8bitBlock - 1) / kAdamW8bitBlock);
  adamw_8bit_kernel<G><<<blocks, kThreads8bit, 0, stream>>>(
      params, params_copy, grads, m, v, m_absmax, v_absmax, count, runs, run_count, maps,
      settings.lr, settings.beta1, settings.beta2, settings.eps, settings.weight_decay,
      settings.grad_scale, correction(settings.beta1), correction(settings.beta2));
  AT_CUDA_CHECK_LAUNCH();
}

template <typename G>
void adamw_update(float* params, G* params_copy, const float* grads, float* m, float* v,
                  std::size_t count, const AdamWSettings& settings, cudaStream_t stream) {
  AT_CHECK(settings.step >= 1, "adamw_update: step must count from 1, got ", settings.step);
  if (count == 0) return;
  // Bias corrections in double: at step 1e6 beta^t underflows float's useful range.
  const auto correction = [&](float beta) {
    return static_cast<float>(1.0 - std::pow(double{beta}, static_cast<double>(settings.step)));
  };
  const float c1 = correction(settings.beta1);
  const float c2 = correction(settings.beta2);
  const auto launch = [&](auto w, std::size_t first, std::size_t packs) {
    G* copy = params_copy == nullptr ? nullptr : params_copy + first;
    adamw_kernel<decltype(w)::value><<<grid_for(packs), kBlockThreads, 0, stream>>>(
        params + first, copy, grads + first, m + first, v + first, packs, settings.lr,
        settings.beta1, settings.beta2, settings.eps, settings.weight_decay, settings.grad_scale,
        c1, c2);
    AT_CUDA_CHECK_LAUNCH();
  };
  launch_packed_then_tail<kPack<G>>(count, launch, params, params_copy, grads, m, v);
}

#define AT_ADAMW(G)                                                                    \
  template void adamw_update<G>(float*, G*, const float*, float*, float*, std::size_t, \
                                const AdamWSettings&, cudaStream_t);
AT_GPU_INSTANTIATE(AT_ADAMW)

#define AT_ADAMW_8BIT(G)                                                                     \
  template void adamw_8bit_update<G>(float*, G*, const float*, std::uint8_t*, std::uint8_t*, \
                                     float*, float*, std::size_t, const AdamW8bitRun*, int,  \
                                     const float*, const AdamWSettings&, cudaStream_t);
AT_GPU_INSTANTIATE(AT_ADAMW_8BIT)

}  // namespace autotrain::kernels::gpu
