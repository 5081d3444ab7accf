// AdamW on the device over fp32 master weights and fp32 moments, the update of
// optim/optimizer.cpp element for element (decoupled weight decay on the pre-update weight).
// With mixed precision the same pass writes the bf16/fp16 compute copy of each updated weight.
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

}  // namespace

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

}  // namespace autotrain::kernels::gpu
