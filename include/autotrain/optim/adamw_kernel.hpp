#pragma once
// The fused CPU AdamW update: one pass over memory that reads p, g, m, v and writes p, m, v
// (28 bytes an element, 30 with a 16-bit copy of the weights), so that a step over a large shard
// (ZeRO-Offload's CPU step) runs at the memory's bandwidth (docs/benchmarks.md, "CPU AdamW").
//
// Semantics: torch.optim.AdamW, decoupled weight decay on the pre-update weight, as
// Optimizer::step. With t = step and the bias corrections c1 = 1 - beta1^t, c2 = 1 - beta2^t
// (computed in double, rounded to float):
//   g' = g * grad_scale
//   m  = beta1 * m + (1 - beta1) * g'
//   v  = beta2 * v + (1 - beta2) * g' * g'
//   p  = p - lr * ((m / c1) / (sqrt(v / c2) + eps) + weight_decay * p)
// Every instruction-set path rounds each element alike, so a result does not depend on the thread
// count, on where a shard begins, or on whether the element fell in a vector or in the tail.
#include <cstddef>
#include <cstdint>

namespace autotrain {

struct AdamWStepArgs {
  float lr = 0, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, weight_decay = 0, grad_scale = 1;
  long long step = 1;  // the step number after increment (bias corrections use it; in double)
};

// p: fp32 master weights, g: fp32 gradients (times grad_scale first), m, v: the moments; n
// elements each, none of them overlapping. OpenMP threads in static blocks (one thread below
// a few tens of thousands of elements), AVX-512 or AVX2 where the build targets them.
void adamw_update(float* p, const float* g, float* m, float* v, std::size_t n,
                  const AdamWStepArgs& args);
// The same, also writing the updated weight rounded to nearest even into `copy` (n elements) in
// the same pass: bfloat16 bits (a NaN stays a quiet NaN) ...
void adamw_update_bf16(float* p, const float* g, float* m, float* v, std::uint16_t* copy,
                       std::size_t n, const AdamWStepArgs& args);
// ... or IEEE binary16 bits (past 65504 an infinity, as a cast in torch; subnormals kept).
void adamw_update_fp16(float* p, const float* g, float* m, float* v, std::uint16_t* copy,
                       std::size_t n, const AdamWStepArgs& args);

}  // namespace autotrain
