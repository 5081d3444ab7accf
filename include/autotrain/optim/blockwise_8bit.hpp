#pragma once
// Blockwise 8-bit storage of optimizer state, as bitsandbytes' 8-bit optimizers keep their moments
// (Dettmers et al., "8-bit Optimizers via Block-wise Quantization", 2022). The state is cut into
// blocks of kQuantBlock consecutive elements (the last one may be shorter); a block keeps one fp32
// absmax, the largest |value| in it, and per element one uint8 code, the index of the entry of a
// 256-entry dynamic map nearest to value / absmax:
//   value ≈ map[code] * absmax       (a block of zeros: absmax 0, every value 0)
//
// The maps are bitsandbytes' dynamic maps (core/dynamic_map.hpp): the signed one for AdamW's first
// moment m, the unsigned one for its second moment v.
//
// Nearest: the entry at the least distance |x - map[k]| in float; a tie goes to the lower entry;
// a value below map[0] (the signed map stops at about -0.993) takes code 0.
#include <array>
#include <cstddef>
#include <cstdint>

#include "autotrain/core/dynamic_map.hpp"

namespace autotrain {

// Elements per block, bitsandbytes' block size for its 8-bit optimizers.
constexpr std::size_t kQuantBlock = 2048;

inline std::size_t quant_blocks(std::size_t n) {
  return (n + kQuantBlock - 1) / kQuantBlock;
}

// The code of the entry nearest to `x` (normally in [-1, 1]): a branch-free binary search for the
// last entry not above x, then the nearer of it and the next.
inline std::uint8_t quantize_nearest(const DynamicMap& map, float x) {
  unsigned low = 0;
  for (unsigned step = 128; step > 0; step >>= 1) low += map[low + step] <= x ? step : 0;
  const unsigned high = low < 255 ? low + 1 : 255;
  return static_cast<std::uint8_t>(map[high] - x < x - map[low] ? high : low);
}

// One block: codes[0, count) of values[0, count) against their absmax, which it returns.
float quantize_block(const float* values, std::size_t count, const DynamicMap& map,
                     std::uint8_t* codes);

// All of values[0, n) in blocks of kQuantBlock: codes[n], absmax[quant_blocks(n)]. In parallel
// over blocks (OpenMP).
void quantize_blockwise(const float* values, std::size_t n, const DynamicMap& map,
                        std::uint8_t* codes, float* absmax);
// Quantizes again what dequantize_blockwise gave (a checkpoint's moments), so that it reads back
// unchanged: quantize_blockwise's codes and absmax, except in a block whose largest magnitude is
// negative (the signed map stops at map[0], about -0.993, so that value was map[0] times the
// block's absmax, not the absmax): there the absmax that reads every value back, where one does
// (values that are not a dequantized block keep quantize_blockwise's result).
float requantize_block(const float* values, std::size_t count, const DynamicMap& map,
                       std::uint8_t* codes);
void requantize_blockwise(const float* values, std::size_t n, const DynamicMap& map,
                          std::uint8_t* codes, float* absmax);
// The inverse: values[i] = map[codes[i]] * absmax[i / kQuantBlock].
void dequantize_blockwise(const std::uint8_t* codes, const float* absmax, std::size_t n,
                          const DynamicMap& map, float* values);

}  // namespace autotrain
