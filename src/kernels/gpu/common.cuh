#pragma once
// Private helpers of the CUDA kernels: fp32 loads/stores of every element type, 128-bit packed
// accesses, warp reductions, launch sizes, and the explicit instantiation list (float,
// __nv_bfloat16, __half).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "autotrain/core/error.hpp"
#include "autotrain/core/gpu/check.hpp"

namespace autotrain::kernels::gpu {

__device__ __forceinline__ float to_float(float x) {
  return x;
}
__device__ __forceinline__ float to_float(__nv_bfloat16 x) {
  return __bfloat162float(x);
}
__device__ __forceinline__ float to_float(__half x) {
  return __half2float(x);
}

// Round to nearest even, as the CPU's float_to_bf16/float_to_fp16.
template <typename F>
__device__ __forceinline__ F from_float(float x);
template <>
__device__ __forceinline__ float from_float<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}
template <>
__device__ __forceinline__ __half from_float<__half>(float x) {
  return __float2half_rn(x);
}

// W consecutive elements of F moved together. With 16 bytes or more (kPack<F> = 8 bf16/fp16 or 4
// fp32; 8 fp32 next to 8 bf16) each 16 bytes is one 128-bit load or store, which keeps 8x the
// bytes of a 2-byte access in flight per instruction: what an H200 needs to reach its bandwidth.
// W = 1 is the scalar path for rows and pointers that do not allow packing. Elements are read and
// written in fp32 (get/set); set rounds to nearest even once, as from_float.
template <typename F, int W>
struct alignas(sizeof(F) * W < 16 ? sizeof(F) * W : 16) Packed {
  F values[W];
  __device__ __forceinline__ float get(int i) const { return to_float(values[i]); }
  __device__ __forceinline__ void set(int i, float x) { values[i] = from_float<F>(x); }
};

// Elements of F in one 128-bit access.
template <typename F>
inline constexpr int kPack = static_cast<int>(16 / sizeof(F));

// A GPU faults on a 16-byte access that is not 16-byte aligned ("misaligned address"); the
// emulator stops the run the same way. Nothing is checked on the GPU.
__device__ __forceinline__ void check_vector_access([[maybe_unused]] const void* pointer) {
#ifdef AUTOTRAIN_CUDA_EMULATED
  cuda_emu::check_vector_access(pointer, 16);
#endif
}

template <int W, typename F>
__device__ __forceinline__ Packed<F, W> load_packed(const F* p) {
  Packed<F, W> x;
  if constexpr (sizeof(x) % 16 == 0) {
    for (std::size_t b = 0; b < sizeof(x); b += 16) {
      const char* address = reinterpret_cast<const char*>(p) + b;
      check_vector_access(address);
      const uint4 bits = *reinterpret_cast<const uint4*>(address);
      std::memcpy(reinterpret_cast<char*>(&x) + b, &bits, 16);
    }
  } else {
    for (int i = 0; i < W; ++i) x.values[i] = p[i];
  }
  return x;
}

template <int W, typename F>
__device__ __forceinline__ void store_packed(F* p, const Packed<F, W>& x) {
  if constexpr (sizeof(x) % 16 == 0) {
    for (std::size_t b = 0; b < sizeof(x); b += 16) {
      char* address = reinterpret_cast<char*>(p) + b;
      check_vector_access(address);
      uint4 bits;
      std::memcpy(&bits, reinterpret_cast<const char*>(&x) + b, 16);
      *reinterpret_cast<uint4*>(address) = bits;
    }
  } else {
    for (int i = 0; i < W; ++i) p[i] = x.values[i];
  }
}

// Host side: whether every pointer allows 16-byte accesses (nullptr does: it is never accessed).
template <typename... P>
bool all_aligned_16(const P*... pointers) {
  return ((reinterpret_cast<std::uintptr_t>(pointers) % 16 == 0) && ...);
}

// How many of n flat elements the packed path covers: the whole packs of W when every pointer is
// 16-byte aligned, else none. The remaining n - result elements take the scalar path.
template <int W, typename... P>
std::size_t packed_prefix(std::size_t n, const P*... pointers) {
  return all_aligned_16(pointers...) ? n / W * W : 0;
}

// Runs an elementwise kernel over n flat elements in two launches: the whole packs of W elements
// (W = kPack of the narrowest element type: 16 bytes of it at a time) when every pointer allows,
// then the rest one element at a time (W = 1). launch(w, first, count) queues the kernel for
// W = decltype(w)::value over `count` packs of W elements starting at element `first`.
template <int W, typename Launch, typename... P>
void launch_packed_then_tail(std::size_t n, const Launch& launch, const P*... pointers) {
  const std::size_t packed = packed_prefix<W>(n, pointers...);
  if (packed > 0) launch(std::integral_constant<int, W>{}, std::size_t{0}, packed / W);
  if (packed < n) launch(std::integral_constant<int, 1>{}, packed, n - packed);
}

// Whether rows of `length` elements starting at these row-0 pointers can be read in packs: every
// row then starts 16-byte aligned.
template <typename F, typename... P>
bool rows_packable(std::size_t length, const P*... pointers) {
  return length % kPack<F> == 0 && all_aligned_16(pointers...);
}

__device__ __forceinline__ float warp_sum(float x) {
  for (int offset = 16; offset > 0; offset /= 2) x += __shfl_xor_sync(0xffffffffu, x, offset);
  return x;
}

__device__ __forceinline__ float warp_max(float x) {
  for (int offset = 16; offset > 0; offset /= 2)
    x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, offset));
  return x;
}

// The cuBLAS / cuBLASLt type tag of an element type.
template <typename F>
constexpr cudaDataType_t data_type();
template <>
constexpr cudaDataType_t data_type<float>() {
  return CUDA_R_32F;
}
template <>
constexpr cudaDataType_t data_type<__nv_bfloat16>() {
  return CUDA_R_16BF;
}
template <>
constexpr cudaDataType_t data_type<__half>() {
  return CUDA_R_16F;
}

// An online softmax denominator: the running maximum and Σ exp(x - max) of the values seen.
struct SoftmaxStats {
  float max = -INFINITY;
  float sum = 0.0f;
  __device__ __forceinline__ void add(float x) {
    const float m = fmaxf(max, x);
    sum = sum * expf(max - m) + expf(x - m);
    max = m;
  }
  // Merges the lanes' statistics; every lane ends with the warp's.
  __device__ __forceinline__ void warp_merge() {
    for (int offset = 16; offset > 0; offset /= 2) {
      const float other_max = __shfl_xor_sync(0xffffffffu, max, offset);
      const float other_sum = __shfl_xor_sync(0xffffffffu, sum, offset);
      const float m = fmaxf(max, other_max);
      // A lane with no values holds (-inf, 0); two of them merge to (-inf, 0), not exp(inf - inf).
      if (m != -INFINITY) sum = sum * expf(max - m) + other_sum * expf(other_max - m);
      max = m;
    }
  }
};

inline constexpr int kWarp = 32;
inline constexpr int kBlockThreads = 256;

// Blocks for a grid-stride loop over n elements: enough to fill an H200, never more than needed.
inline unsigned grid_for(std::size_t n, int threads = kBlockThreads) {
  const std::size_t blocks = (n + static_cast<std::size_t>(threads) - 1) / threads;
  return static_cast<unsigned>(blocks < 65536 ? (blocks == 0 ? 1 : blocks) : 65536);
}

inline unsigned ceil_div(std::size_t n, std::size_t d) {
  return static_cast<unsigned>((n + d - 1) / d);
}

}  // namespace autotrain::kernels::gpu

// Instantiates a function template declared in the public header for the three element types.
#define AT_GPU_INSTANTIATE(MACRO) \
  MACRO(float)                    \
  MACRO(__nv_bfloat16)            \
  MACRO(__half)
