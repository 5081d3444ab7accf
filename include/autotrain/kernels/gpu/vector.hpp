#pragma once
// Whole-buffer CUDA helpers of the device engine: the fp32 → compute-type cast that fills the
// bf16/fp16 copy of the master weights, the sum of squares behind the global gradient norm, the
// add that accumulates a reduced gradient part into the shard (ZeRO stages 2 and 3), and the
// widening of bf16/fp16 gradients into the fp32 buffers where they are reduced and accumulated.
// Element types: float, __nv_bfloat16, __half.
#ifdef AUTOTRAIN_HAVE_CUDA
#include <cstddef>

#include "autotrain/core/gpu/device.hpp"

namespace autotrain::kernels::gpu {

// out[i] = in[i] rounded to nearest even (a plain copy for float).
template <typename G>
void cast_from_float(G* out, const float* in, std::size_t n, cudaStream_t stream);

// shard[i] = shard[i] + part[i], added in fp32 and rounded once to G. No overlap.
template <typename G>
void add_into(G* shard, const G* part, std::size_t n, cudaStream_t stream);

// out[i] = in[i] in fp32 (exact). No overlap.
template <typename G>
void cast_to_float(float* out, const G* in, std::size_t n, cudaStream_t stream);

// into[i] = into[i] + part[i] in fp32 (part widened exactly, the sum rounded to fp32 once).
template <typename G>
void accumulate_into(float* into, const G* part, std::size_t n, cudaStream_t stream);

// Floats of scratch sum_of_squares needs (one partial sum per block of the first pass).
inline constexpr std::size_t kSumOfSquaresScratch = 1024;

// *total += Σ x[i]² over n elements, each squared in fp32, per-block partials in fp32 and their
// sum in double: the same result for the same input on every call (no atomics). `total` is one
// double in device memory.
template <typename G>
void sum_of_squares(double* total, const G* x, std::size_t n, float* scratch, cudaStream_t stream);

}  // namespace autotrain::kernels::gpu
#endif  // AUTOTRAIN_HAVE_CUDA
