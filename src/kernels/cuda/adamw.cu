// AdamW on the device over fp32 master weights and fp32 moments, the update of
// optim/optimizer.cpp element for element (decoupled weight decay on the pre-update weight).
// With mixed precision the same pass writes the bf16/fp16 compute copy of each updated weight.
#include <cmath>

#include "autotrain/kernels/cuda/adamw.hpp"
#include "common.cuh"

namespace autotrain::kernels::gpu {
namespace {

template <typename G>
__global__ void adamw_kernel(float* params, G* params_copy, const G* grads, float* m, float* v,
                             std::size_t count, float lr, float beta1, float beta2, float eps,
                             float weight_decay, float grad_scale, float correction1,
                             float correction2) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < count;
       i += std::size_t{gridDim.x} * blockDim.x) {
    const float grad = to_float(grads[i]) * grad_scale;
    const float mi = beta1 * m[i] + (1.0f - beta1) * grad;
    const float vi = beta2 * v[i] + (1.0f - beta2) * grad * grad;
    m[i] = mi;
    v[i] = vi;
    const float m_hat = mi / correction1;
    const float v_hat = vi / correction2;
    const float p = params[i];
    const float updated = p - lr * (m_hat / (sqrtf(v_hat) + eps) + weight_decay * p);
    params[i] = updated;
    if (params_copy != nullptr) params_copy[i] = from_float<G>(updated);
  }
}

}  // namespace

template <typename G>
void adamw_update(float* params, G* params_copy, const G* grads, float* m, float* v,
                  std::size_t count, const AdamWSettings& settings, cudaStream_t stream) {
  AT_CHECK(settings.step >= 1, "adamw_update: step must count from 1, got ", settings.step);
  if (count == 0) return;
  // Bias corrections in double: at step 1e6 beta^t underflows float's useful range.
  const auto correction = [&](float beta) {
    return static_cast<float>(1.0 - std::pow(double{beta}, static_cast<double>(settings.step)));
  };
  adamw_kernel<<<grid_for(count), kBlockThreads, 0, stream>>>(
      params, params_copy, grads, m, v, count, settings.lr, settings.beta1, settings.beta2,
      settings.eps, settings.weight_decay, settings.grad_scale, correction(settings.beta1),
      correction(settings.beta2));
  AT_CUDA_CHECK_LAUNCH();
}

#define AT_ADAMW(G)                                                                \
  template void adamw_update<G>(float*, G*, const G*, float*, float*, std::size_t, \
                                const AdamWSettings&, cudaStream_t);
AT_GPU_INSTANTIATE(AT_ADAMW)

}  // namespace autotrain::kernels::gpu
