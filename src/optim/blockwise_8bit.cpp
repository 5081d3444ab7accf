// Blockwise 8-bit storage (optim/blockwise_8bit.hpp): the dynamic maps and the block's quantize and
// dequantize loops.
#include "autotrain/optim/blockwise_8bit.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "autotrain/core/error.hpp"

namespace autotrain {

DynamicMap create_dynamic_map(bool is_signed) {
  constexpr int kExponentBits = 7;
  std::vector<double> entries;
  for (int i = 0; i < kExponentBits; ++i) {
    // k midpoints of linspace(0.1, 1, k + 1) (numpy's: start + j * step, the last point exact).
    const int k = is_signed ? 1 << i : 1 << (i + 1);
    const double step = (1.0 - 0.1) / k;
    const auto boundary = [&](int j) { return j == k ? 1.0 : 0.1 + j * step; };
    const double scale = std::pow(10.0, i - (kExponentBits - 1));
    for (int j = 0; j < k; ++j) {
      const double mean = (boundary(j) + boundary(j + 1)) / 2.0;
      entries.push_back(scale * mean);
      if (is_signed) entries.push_back(-scale * mean);
    }
  }
  entries.push_back(0.0);
  entries.push_back(1.0);
  AT_CHECK(entries.size() == 256, "the dynamic map has ", entries.size(), " entries, not 256");
  std::sort(entries.begin(), entries.end());
  DynamicMap map{};
  for (std::size_t i = 0; i < map.size(); ++i) map[i] = static_cast<float>(entries[i]);
  return map;
}

const DynamicMap& signed_dynamic_map() {
  static const DynamicMap map = create_dynamic_map(true);
  return map;
}

const DynamicMap& unsigned_dynamic_map() {
  static const DynamicMap map = create_dynamic_map(false);
  return map;
}

float quantize_block(const float* values, std::size_t count, const DynamicMap& map,
                     std::uint8_t* codes) {
  float absmax = 0.0f;
#pragma omp simd reduction(max : absmax)
  for (std::size_t i = 0; i < count; ++i) absmax = std::max(absmax, std::fabs(values[i]));
  // A block of zeros keeps absmax 0: every code then reads back as 0, whichever it is.
  const float divisor = absmax > 0.0f ? absmax : 1.0f;
#pragma omp simd
  for (std::size_t i = 0; i < count; ++i) codes[i] = quantize_nearest(map, values[i] / divisor);
  return absmax;
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
