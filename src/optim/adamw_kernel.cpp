// The fused CPU AdamW update (optim/adamw_kernel.hpp): one pass over p, g, m, v and the 16-bit
// copy, in OpenMP static blocks, with AVX-512 or AVX2 vectors where the build targets them and a
// portable loop otherwise (which also does each block's last few elements).
//
// Invariant: every path evaluates the same expression, operation for operation, with the same
// roundings: the multiply-adds this file names fused where the build has FMA (std::fma, the
// _fmadd_ intrinsics) and no other (the file is compiled with -ffp-contract=off, CMakeLists.txt),
// sqrt and division correctly rounded, the same 16-bit rounding. So an element's result is the same
// whatever thread, vector lane or tail it fell in, and so whatever the world size; and it is the
// result Optimizer::step's own loop gave before it called this kernel, bit for bit (GCC had fused
// the same multiply-adds there).
#include "autotrain/optim/adamw_kernel.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "adamw_math.hpp"
#include "autotrain/core/dtype.hpp"
#include "intrinsics.hpp"

namespace autotrain {
namespace {

enum class CopyKind { none, bf16, fp16 };

// fp16 rounding of one float: the F16C instruction where there is one, so that the tail's NaNs
// keep the payload the vector conversion keeps; core's conversion otherwise.
inline std::uint16_t round_to_fp16(float value) {
#if defined(__F16C__)
  const __m128i half =
      _mm_cvtps_ph(_mm_set_ss(value), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  return static_cast<std::uint16_t>(_mm_extract_epi16(half, 0));
#else
  return float_to_fp16(value);
#endif
}

// Elements [begin, end) one at a time (the compiler may vectorise it): the reference expression
// every vector path reproduces, operation for operation.
template <CopyKind kCopy>
void update_portable(const AdamWConstants& k, float* p, const float* g, float* m, float* v,
                     std::uint16_t* copy, std::size_t begin, std::size_t end) {
#pragma omp simd
  for (std::size_t i = begin; i < end; ++i) {
    float m_new = m[i], v_new = v[i];
    const float p_new = adamw_element(k, p[i], g[i], m_new, v_new);
    m[i] = m_new;
    v[i] = v_new;
    p[i] = p_new;
    if constexpr (kCopy == CopyKind::bf16) copy[i] = float_to_bf16(p_new);
    if constexpr (kCopy == CopyKind::fp16) copy[i] = round_to_fp16(p_new);
  }
}

#if defined(__AVX512F__)
#define AUTOTRAIN_ADAMW_VECTORS 1

constexpr std::size_t kLanes = 16;

// float_to_bf16 on 16 lanes: add 0x7fff plus the kept bit's parity, keep the high half; a NaN
// keeps its high half with the quiet bit set.
inline __m256i round_to_bf16(__m512 value) {
  const __m512i bits = _mm512_castps_si512(value);
  const __m512i high = _mm512_srli_epi32(bits, 16);
  const __m512i odd = _mm512_and_si512(high, _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_srli_epi32(
      _mm512_add_epi32(bits, _mm512_add_epi32(odd, _mm512_set1_epi32(0x7fff))), 16);
  const __mmask16 nan = _mm512_cmp_ps_mask(value, value, _CMP_UNORD_Q);
  const __m512i quiet = _mm512_or_si512(high, _mm512_set1_epi32(0x40));
  return _mm512_cvtepi32_epi16(_mm512_mask_blend_epi32(nan, rounded, quiet));
}

template <CopyKind kCopy>
void update_vectors(const AdamWConstants& k, float* p, const float* g, float* m, float* v,
                    std::uint16_t* copy, std::size_t begin, std::size_t end) {
  const __m512 beta1 = _mm512_set1_ps(k.beta1), one_minus_beta1 = _mm512_set1_ps(k.one_minus_beta1);
  const __m512 beta2 = _mm512_set1_ps(k.beta2), one_minus_beta2 = _mm512_set1_ps(k.one_minus_beta2);
  const __m512 grad_scale = _mm512_set1_ps(k.grad_scale), eps = _mm512_set1_ps(k.eps);
  const __m512 correction1 = _mm512_set1_ps(k.correction1);
  const __m512 correction2 = _mm512_set1_ps(k.correction2);
  const __m512 weight_decay = _mm512_set1_ps(k.weight_decay), minus_lr = _mm512_set1_ps(k.minus_lr);
  for (std::size_t i = begin; i < end; i += kLanes) {
    const __m512 grad = _mm512_mul_ps(_mm512_loadu_ps(g + i), grad_scale);
    const __m512 m_new =
        _mm512_fmadd_ps(beta1, _mm512_loadu_ps(m + i), _mm512_mul_ps(one_minus_beta1, grad));
    const __m512 v_new = _mm512_fmadd_ps(beta2, _mm512_loadu_ps(v + i),
                                         _mm512_mul_ps(_mm512_mul_ps(one_minus_beta2, grad), grad));
    const __m512 step =
        _mm512_div_ps(_mm512_div_ps(m_new, correction1),
                      _mm512_add_ps(_mm512_sqrt_ps(_mm512_div_ps(v_new, correction2)), eps));
    const __m512 p_old = _mm512_loadu_ps(p + i);
    const __m512 p_new =
        _mm512_fmadd_ps(minus_lr, _mm512_fmadd_ps(weight_decay, p_old, step), p_old);
    _mm512_storeu_ps(m + i, m_new);
    _mm512_storeu_ps(v + i, v_new);
    _mm512_storeu_ps(p + i, p_new);
    auto* copy_out = reinterpret_cast<__m256i*>(copy + i);
    if constexpr (kCopy == CopyKind::bf16) _mm256_storeu_si256(copy_out, round_to_bf16(p_new));
    if constexpr (kCopy == CopyKind::fp16)
      _mm256_storeu_si256(copy_out,
                          _mm512_cvtps_ph(p_new, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
}

#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define AUTOTRAIN_ADAMW_VECTORS 1

constexpr std::size_t kLanes = 8;

// float_to_bf16 on 8 lanes (see the AVX-512 version), packed to 8 halves.
inline __m128i round_to_bf16(__m256 value) {
  const __m256i bits = _mm256_castps_si256(value);
  const __m256i high = _mm256_srli_epi32(bits, 16);
  const __m256i odd = _mm256_and_si256(high, _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_srli_epi32(
      _mm256_add_epi32(bits, _mm256_add_epi32(odd, _mm256_set1_epi32(0x7fff))), 16);
  const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(value, value, _CMP_UNORD_Q));
  const __m256i quiet = _mm256_or_si256(high, _mm256_set1_epi32(0x40));
  const __m256i halves = _mm256_blendv_epi8(rounded, quiet, nan);  // each lane below 0x10000
  // packus works within 128-bit lanes: take 64-bit parts 0 and 2.
  return _mm256_castsi256_si128(
      _mm256_permute4x64_epi64(_mm256_packus_epi32(halves, halves), 0b1000));
}

template <CopyKind kCopy>
void update_vectors(const AdamWConstants& k, float* p, const float* g, float* m, float* v,
                    std::uint16_t* copy, std::size_t begin, std::size_t end) {
  const __m256 beta1 = _mm256_set1_ps(k.beta1), one_minus_beta1 = _mm256_set1_ps(k.one_minus_beta1);
  const __m256 beta2 = _mm256_set1_ps(k.beta2), one_minus_beta2 = _mm256_set1_ps(k.one_minus_beta2);
  const __m256 grad_scale = _mm256_set1_ps(k.grad_scale), eps = _mm256_set1_ps(k.eps);
  const __m256 correction1 = _mm256_set1_ps(k.correction1);
  const __m256 correction2 = _mm256_set1_ps(k.correction2);
  const __m256 weight_decay = _mm256_set1_ps(k.weight_decay), minus_lr = _mm256_set1_ps(k.minus_lr);
  for (std::size_t i = begin; i < end; i += kLanes) {
    const __m256 grad = _mm256_mul_ps(_mm256_loadu_ps(g + i), grad_scale);
    const __m256 m_new =
        _mm256_fmadd_ps(beta1, _mm256_loadu_ps(m + i), _mm256_mul_ps(one_minus_beta1, grad));
    const __m256 v_new = _mm256_fmadd_ps(beta2, _mm256_loadu_ps(v + i),
                                         _mm256_mul_ps(_mm256_mul_ps(one_minus_beta2, grad), grad));
    const __m256 step =
        _mm256_div_ps(_mm256_div_ps(m_new, correction1),
                      _mm256_add_ps(_mm256_sqrt_ps(_mm256_div_ps(v_new, correction2)), eps));
    const __m256 p_old = _mm256_loadu_ps(p + i);
    const __m256 p_new =
        _mm256_fmadd_ps(minus_lr, _mm256_fmadd_ps(weight_decay, p_old, step), p_old);
    _mm256_storeu_ps(m + i, m_new);
    _mm256_storeu_ps(v + i, v_new);
    _mm256_storeu_ps(p + i, p_new);
    auto* copy_out = reinterpret_cast<__m128i*>(copy + i);
    if constexpr (kCopy == CopyKind::bf16) _mm_storeu_si128(copy_out, round_to_bf16(p_new));
    if constexpr (kCopy == CopyKind::fp16)
      _mm_storeu_si128(copy_out,
                       _mm256_cvtps_ph(p_new, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
}

#endif

// One thread's block: the portable loop up to the first weight that starts a 64-byte line, whole
// vectors from there, the portable loop for the rest. Buffers from malloc or calloc start 16 bytes
// into a line, and a vector across two lines costs two accesses: every AVX-512 one, unaligned.
// (g, m and v come from the same allocator, so they are aligned with p.)
template <CopyKind kCopy>
void update_block(const AdamWConstants& k, float* p, const float* g, float* m, float* v,
                  std::uint16_t* copy, std::size_t begin, std::size_t end) {
#if defined(AUTOTRAIN_ADAMW_VECTORS)
  const auto address = reinterpret_cast<std::uintptr_t>(p + begin);
  const std::size_t head = std::min(end - begin, (64 - address % 64) % 64 / sizeof(float));
  update_portable<kCopy>(k, p, g, m, v, copy, begin, begin + head);
  begin += head;
  const std::size_t vector_end = begin + (end - begin) / kLanes * kLanes;
  update_vectors<kCopy>(k, p, g, m, v, copy, begin, vector_end);
  begin = vector_end;
#endif
  update_portable<kCopy>(k, p, g, m, v, copy, begin, end);
}

// Below this many elements a parallel region costs more than it saves.
constexpr std::size_t kMinParallelElements = std::size_t{1} << 15;

// Static blocks of whole 64-byte lines of floats, one per thread, so that no two threads write
// the same cache line (where the arrays are line-aligned).
template <CopyKind kCopy>
void update_parallel(float* p, const float* g, float* m, float* v, std::uint16_t* copy,
                     std::size_t n, const AdamWStepArgs& args) {
  const AdamWConstants k(args);
#pragma omp parallel if (n >= kMinParallelElements)
  {
    constexpr std::size_t kLine = 16;
    const auto threads = static_cast<std::size_t>(omp_get_num_threads());
    const auto thread = static_cast<std::size_t>(omp_get_thread_num());
    const std::size_t per_thread = ((n + kLine - 1) / kLine + threads - 1) / threads * kLine;
    const std::size_t begin = std::min(n, thread * per_thread);
    const std::size_t end = std::min(n, begin + per_thread);
    update_block<kCopy>(k, p, g, m, v, copy, begin, end);
  }
}

}  // namespace

void adamw_update(float* p, const float* g, float* m, float* v, std::size_t n,
                  const AdamWStepArgs& args) {
  update_parallel<CopyKind::none>(p, g, m, v, nullptr, n, args);
}

void adamw_update_bf16(float* p, const float* g, float* m, float* v, std::uint16_t* copy,
                       std::size_t n, const AdamWStepArgs& args) {
  update_parallel<CopyKind::bf16>(p, g, m, v, copy, n, args);
}

void adamw_update_fp16(float* p, const float* g, float* m, float* v, std::uint16_t* copy,
                       std::size_t n, const AdamWStepArgs& args) {
  update_parallel<CopyKind::fp16>(p, g, m, v, copy, n, args);
}

}  // namespace autotrain
