#pragma once
// The fused CPU AdamW update (provisional scalar version; the vectorised kernel replaces it).
#include <cstddef>
#include <cstdint>

namespace autotrain {

struct AdamWStepArgs {
  float lr = 0, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, weight_decay = 0, grad_scale = 1;
  long long step = 1;
};

void adamw_update(float* p, const float* g, float* m, float* v, std::size_t n,
                  const AdamWStepArgs& args);
void adamw_update_bf16(float* p, const float* g, float* m, float* v, std::uint16_t* copy,
                       std::size_t n, const AdamWStepArgs& args);
void adamw_update_fp16(float* p, const float* g, float* m, float* v, std::uint16_t* copy,
                       std::size_t n, const AdamWStepArgs& args);

}  // namespace autotrain
