#include "autotrain/ckpt/checksum.hpp"

#include <bit>

namespace autotrain::ckpt {

uint64_t checksum_piece(uint64_t offset, std::span<const float> values) {
  // Four independent accumulators let the compiler interleave the multiply chains.
  uint64_t sums[4] = {0, 0, 0, 0};
  size_t k = 0;
  const size_t n = values.size();
  for (; k + 4 <= n; k += 4) {
    for (size_t lane = 0; lane < 4; ++lane) {
      sums[lane] += checksum_term(offset + k + lane, std::bit_cast<uint32_t>(values[k + lane]));
    }
  }
  for (; k < n; ++k) sums[0] += checksum_term(offset + k, std::bit_cast<uint32_t>(values[k]));
  return sums[0] + sums[1] + sums[2] + sums[3];
}

}  // namespace autotrain::ckpt
