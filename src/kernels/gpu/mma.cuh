#pragma once
// One warp's tensor-core product with register fragments: mma.sync m16n8k16, bf16 or fp16 inputs,
// fp32 accumulation. Unlike WMMA's opaque fragments, the PTX ISA documents which lane holds which
// element, so a kernel can keep a product's result in registers and feed it to the next product
// (flash attention's S -> P -> P·V) without a round trip through shared memory.
//
// Lane l of the warp, with g = l / 4 (its group) and t = l % 4 (its place in the group), holds:
//   A, 16 x 16 (row-major), four 32-bit registers of two elements each (low half: lower column):
//     a[0] = A[g][2t, 2t+1]    a[1] = A[g+8][2t, 2t+1]
//     a[2] = A[g][2t+8, +9]    a[3] = A[g+8][2t+8, +9]
//   B, 16 x 8 (k x n), two registers (low half: lower k):
//     b[0] = B[2t, 2t+1][g]    b[1] = B[2t+8, 2t+9][g]
//   C and D, 16 x 8 fp32:
//     c[0], c[1] = C[g][2t, 2t+1]    c[2], c[3] = C[g+8][2t, 2t+1]
// So the accumulators of two neighbouring n-tiles (columns 0..7 and 8..15) are, once rounded and
// paired, exactly an A fragment of the next product: to_a_fragment.
//
// The emulator (AUTOTRAIN_CUDA_EMULATED, tests/cuda_emu/prelude.hpp) runs the same layout in C++:
// each lane gathers the warp's registers and computes its own four outputs.
#include <cstdint>
#include <cstring>

#include "common.cuh"

namespace autotrain::kernels::gpu {

// Two consecutive elements p[0], p[1] (p 4-byte aligned) as one register, p[0] in the low half.
template <typename F>
__device__ __forceinline__ std::uint32_t load_pair(const F* p) {
  static_assert(sizeof(F) == 2, "mma fragments hold 16-bit elements");
#ifdef AUTOTRAIN_CUDA_EMULATED
  cuda_emu::check_vector_access(p, 4);  // a GPU faults on a misaligned 4-byte access
  std::uint32_t bits;
  std::memcpy(&bits, p, sizeof bits);
  return bits;
#else
  return *reinterpret_cast<const std::uint32_t*>(p);
#endif
}

// Stores a register of two elements at p[0], p[1] (p 4-byte aligned), the low half at p[0].
template <typename F>
__device__ __forceinline__ void store_pair(F* p, std::uint32_t bits) {
  static_assert(sizeof(F) == 2, "mma fragments hold 16-bit elements");
#ifdef AUTOTRAIN_CUDA_EMULATED
  cuda_emu::check_vector_access(p, 4);
  std::memcpy(static_cast<void*>(p), &bits, sizeof bits);
#else
  *reinterpret_cast<std::uint32_t*>(p) = bits;
#endif
}

// lo and hi rounded to F (nearest even) and paired, lo in the low half.
template <typename F>
__device__ __forceinline__ std::uint32_t pack_pair(float lo, float hi) {
  static_assert(sizeof(F) == 2, "mma fragments hold 16-bit elements");
  const F pair[2] = {from_float<F>(lo), from_float<F>(hi)};
  std::uint32_t bits;
  std::memcpy(&bits, pair, sizeof bits);
  return bits;
}

// d += a · b for the warp (every lane must call it, converged).
template <typename F>
__device__ __forceinline__ void mma_16x8x16(float (&d)[4], const std::uint32_t (&a)[4],
                                            const std::uint32_t (&b)[2]) {
#ifdef AUTOTRAIN_CUDA_EMULATED
  cuda_emu::mma_m16n8k16<F>(d, a, b);
#else
  if constexpr (std::is_same_v<F, __nv_bfloat16>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else {
    static_assert(std::is_same_v<F, __half>, "mma_16x8x16 takes bf16 or fp16");
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
#endif
}

// The A fragment of columns [16k, 16k + 16) of a 16 x N fp32 accumulator held as N/8 n-tiles,
// rounded to F: the layouts match (see the top of this file).
template <typename F, int Tiles>
__device__ __forceinline__ void to_a_fragment(std::uint32_t (&a)[4], const float (&c)[Tiles][4],
                                              int k) {
  a[0] = pack_pair<F>(c[2 * k][0], c[2 * k][1]);
  a[1] = pack_pair<F>(c[2 * k][2], c[2 * k][3]);
  a[2] = pack_pair<F>(c[2 * k + 1][0], c[2 * k + 1][1]);
  a[3] = pack_pair<F>(c[2 * k + 1][2], c[2 * k + 1][3]);
}

// The A fragment of the 16 x 16 block at `tile` (row-major, `ld` elements per row).
template <typename F>
__device__ __forceinline__ void load_a_fragment(std::uint32_t (&a)[4], const F* tile, int ld,
                                                int lane) {
  const F* p = tile + (lane / 4) * ld + (lane % 4) * 2;
  a[0] = load_pair(p);
  a[1] = load_pair(p + 8 * ld);
  a[2] = load_pair(p + 8);
  a[3] = load_pair(p + 8 * ld + 8);
}

// The B fragment (16 x 8, k x n) whose column n is row n of `tile`: B[k][n] = tile[n][k], tile
// row-major with `ld` elements per row. A K tile for Q·Kᵀ, or any transposed operand kept that way.
template <typename F>
__device__ __forceinline__ void load_b_fragment(std::uint32_t (&b)[2], const F* tile, int ld,
                                                int lane) {
  const F* p = tile + (lane / 4) * ld + (lane % 4) * 2;
  b[0] = load_pair(p);
  b[1] = load_pair(p + 8);
}

}  // namespace autotrain::kernels::gpu
