// Blockwise 8-bit storage (optim/blockwise_8bit.hpp): the dynamic maps and the block's quantize and
// dequantize loops. The quantize loop is the 8-bit AdamW's costliest part (a binary search of 8
// dependent look-ups an element): with AVX-512 it searches 16 elements at once with gathers, the
// same comparisons as quantize_nearest, so every path gives the same codes.
#include "autotrain/optim/blockwise_8bit.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "autotrain/core/error.hpp"
#include "intrinsics.hpp"

namespace autotrain {
namespace {

#if defined(__AVX512F__)
constexpr std::size_t kLanes = 16;

// quantize_nearest on 16 lanes, without gathers (this CPU's gathers cost more than the rest of the
// step): the binary search's probe at step s (128, 64, ..., 1) is entry (2j + 1)s for j = low /
// 2s, one of 128 / s pivots, which permutes pick from registers. The search keeps the values of
// the entries either side (below: the last probe not above x; above: the last one above it), so
// the nearest needs no look-up at the end. The same probes, comparisons (a NaN compares false)
// and tie rule as quantize_nearest.
class NearestSearch16 {
 public:
  explicit NearestSearch16(const DynamicMap& map) : first_(map[255]), lowest_(map[0]) {
    float* at = pivots_;
    for (int s = 64; s >= 1; s >>= 1) {  // step 128's one pivot is broadcast
      const int count = 128 / s;
      for (int j = 0; j < std::max(count, 16); ++j) *at++ = j < count ? map[(2 * j + 1) * s] : 0;
    }
    pivot128_ = map[128];
  }

  __m128i codes(__m512 x) const {
    __m512i low = _mm512_setzero_si512();
    __m512 below = _mm512_set1_ps(lowest_), above = _mm512_set1_ps(first_);
    probe(x, 128, _mm512_set1_ps(pivot128_), low, below, above);
    const float* table = pivots_;
    for (int s = 64; s >= 8; s >>= 1, table += 16) {
      const __m512i j = _mm512_srli_epi32(low, log2(2 * s));
      probe(x, s, _mm512_permutexvar_ps(j, _mm512_loadu_ps(table)), low, below, above);
    }
    // s = 4: 32 pivots; 2: 64; 1: 128 (permutex2var picks from 32, a lane's bit 5 and 6 pick
    // the 32).
    for (int s = 4; s >= 1; s >>= 1) {
      const __m512i j = _mm512_srli_epi32(low, log2(2 * s));
      __m512 pivot = pick32(table, j);
      if (s <= 2) {
        pivot = _mm512_mask_mov_ps(pivot, _mm512_test_epi32_mask(j, _mm512_set1_epi32(32)),
                                   pick32(table + 32, j));
      }
      if (s == 1) {
        const __m512 upper = _mm512_mask_mov_ps(pick32(table + 64, j),
                                                _mm512_test_epi32_mask(j, _mm512_set1_epi32(32)),
                                                pick32(table + 96, j));
        pivot = _mm512_mask_mov_ps(pivot, _mm512_test_epi32_mask(j, _mm512_set1_epi32(64)), upper);
      }
      probe(x, s, pivot, low, below, above);
      table += 128 / s;
    }
    const __m512i high =
        _mm512_min_epi32(_mm512_add_epi32(low, _mm512_set1_epi32(1)), _mm512_set1_epi32(255));
    const __mmask16 nearer_above =
        _mm512_cmp_ps_mask(_mm512_sub_ps(above, x), _mm512_sub_ps(x, below), _CMP_LT_OQ);
    return _mm512_cvtepi32_epi8(_mm512_mask_mov_epi32(low, nearer_above, high));
  }

 private:
  static constexpr int log2(int value) { return value <= 1 ? 0 : 1 + log2(value / 2); }

  // Entry j (the low 5 bits) of the 32 at `table`.
  static __m512 pick32(const float* table, __m512i j) {
    return _mm512_permutex2var_ps(_mm512_loadu_ps(table), j, _mm512_loadu_ps(table + 16));
  }

  // One step: where the pivot is not above x, low moves up by s and below takes the pivot; else
  // above does.
  static void probe(__m512 x, int s, __m512 pivot, __m512i& low, __m512& below, __m512& above) {
    const __mmask16 up = _mm512_cmp_ps_mask(pivot, x, _CMP_LE_OQ);
    low = _mm512_mask_add_epi32(low, up, low, _mm512_set1_epi32(s));
    below = _mm512_mask_mov_ps(below, up, pivot);
    above = _mm512_mask_mov_ps(above, static_cast<__mmask16>(~up), pivot);
  }

  // Steps 64, 32, 16, 8 (16 each, padded), 4 (32), 2 (64), 1 (128).
  float pivots_[4 * 16 + 32 + 64 + 128];
  float pivot128_;
  float first_;   // map[255]: above, when no probe is above x
  float lowest_;  // map[0]: below, when every probe is above x
};
#endif

}  // namespace

namespace {

// codes[0, count) of values[0, count) against `divisor` (the block's absmax, or 1 for zeros).
void encode_block(const float* values, std::size_t count, const DynamicMap& map,
                  std::uint8_t* codes, float divisor) {
  std::size_t i = 0;
#if defined(__AVX512F__)
  const NearestSearch16 search(map);
  const __m512 by = _mm512_set1_ps(divisor);
  for (; i + kLanes <= count; i += kLanes) {
    const __m512 x = _mm512_div_ps(_mm512_loadu_ps(values + i), by);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(codes + i), search.codes(x));
  }
#endif
  for (; i < count; ++i) codes[i] = quantize_nearest(map, values[i] / divisor);
}

// Whether codes against `absmax` read back as exactly `values`.
bool reads_back(const float* values, std::size_t count, const DynamicMap& map,
                const std::uint8_t* codes, float absmax) {
  for (std::size_t i = 0; i < count; ++i) {
    if (map[codes[i]] * absmax != values[i]) return false;
  }
  return true;
}

}  // namespace

float quantize_block(const float* values, std::size_t count, const DynamicMap& map,
                     std::uint8_t* codes) {
  float absmax = 0.0f;
#pragma omp simd reduction(max : absmax)
  for (std::size_t i = 0; i < count; ++i) absmax = std::max(absmax, std::fabs(values[i]));
  // A block of zeros keeps absmax 0: every code then reads back as 0, whichever it is.
  encode_block(values, count, map, codes, absmax > 0.0f ? absmax : 1.0f);
  return absmax;
}

float requantize_block(const float* values, std::size_t count, const DynamicMap& map,
                       std::uint8_t* codes) {
  const float absmax = quantize_block(values, count, map, codes);
  if (map[0] >= 0.0f || absmax == 0.0f || reads_back(values, count, map, codes, absmax)) {
    return absmax;
  }
  // The block's largest magnitude, if negative, was map[0] (about -0.993) times the absmax it was
  // stored with: that absmax, or a float next to the quotient, reads every value back.
  float largest = 0.0f;
  for (std::size_t i = 0; i < count; ++i) {
    if (std::fabs(values[i]) == absmax) {
      largest = values[i];
      break;
    }
  }
  if (largest < 0.0f) {
    const float quotient = largest / map[0];
    for (const float candidate :
         {quotient, std::nextafter(quotient, 0.0f), std::nextafter(quotient, 2.0f * quotient)}) {
      encode_block(values, count, map, codes, candidate);
      if (reads_back(values, count, map, codes, candidate)) return candidate;
    }
  }
  return quantize_block(values, count, map, codes);  // not dequantized 8-bit state
}

void quantize_blockwise(const float* values, std::size_t n, const DynamicMap& map,
                        std::uint8_t* codes, float* absmax) {
  const auto blocks = static_cast<long long>(quant_blocks(n));
#pragma omp parallel for schedule(static) if (blocks > 8)
  for (long long b = 0; b < blocks; ++b) {
    const std::size_t begin = static_cast<std::size_t>(b) * kQuantBlock;
    const std::size_t count = std::min(kQuantBlock, n - begin);
    absmax[b] = quantize_block(values + begin, count, map, codes + begin);
  }
}

void requantize_blockwise(const float* values, std::size_t n, const DynamicMap& map,
                          std::uint8_t* codes, float* absmax) {
  const auto blocks = static_cast<long long>(quant_blocks(n));
#pragma omp parallel for schedule(static) if (blocks > 8)
  for (long long b = 0; b < blocks; ++b) {
    const std::size_t begin = static_cast<std::size_t>(b) * kQuantBlock;
    const std::size_t count = std::min(kQuantBlock, n - begin);
    absmax[b] = requantize_block(values + begin, count, map, codes + begin);
  }
}

void dequantize_blockwise(const std::uint8_t* codes, const float* absmax, std::size_t n,
                          const DynamicMap& map, float* values) {
  const auto blocks = static_cast<long long>(quant_blocks(n));
#pragma omp parallel for schedule(static) if (blocks > 8)
  for (long long b = 0; b < blocks; ++b) {
    const std::size_t begin = static_cast<std::size_t>(b) * kQuantBlock;
    const std::size_t end = std::min(n, begin + kQuantBlock);
    const float scale = absmax[b];
#pragma omp simd
    for (std::size_t i = begin; i < end; ++i) values[i] = map[codes[i]] * scale;
  }
}

}  // namespace autotrain
