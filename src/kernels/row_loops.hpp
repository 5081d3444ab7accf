#pragma once
// The two loop shapes the CPU norm and embedding kernels share (a header of src/kernels/).
//
// Sums over rows are kept deterministic without atomics: threads split the C channels into
// blocks of kChannelBlock and each block walks every row in order, so each channel's sum has
// one fixed order whatever the thread count.
#include <cstddef>

namespace autotrain::kernels {

constexpr int kChannelBlock = 16;

// Calls visit(c0, c1) for the channel blocks [c0, c1) of C, blocks split over the threads.
template <typename Visit>
void for_each_channel_block(int C, Visit visit) {
  const int blocks = (C + kChannelBlock - 1) / kChannelBlock;
#pragma omp parallel for schedule(static)
  for (int blk = 0; blk < blocks; ++blk) {
    const int c0 = blk * kChannelBlock;
    visit(c0, c0 + kChannelBlock < C ? c0 + kChannelBlock : C);
  }
}

// Calls visit(first, vector) for each of the rows × heads vectors of C values (vector
// r·heads + h starts at element r·stride + h·C), rows split over the threads.
template <typename Visit>
void for_each_head_vector(std::size_t rows, int heads, int C, std::size_t stride, Visit visit) {
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t r = 0; r < static_cast<std::ptrdiff_t>(rows); ++r) {
    for (int h = 0; h < heads; ++h) {
      visit(static_cast<std::size_t>(r) * stride + static_cast<std::size_t>(h) * C,
            static_cast<std::size_t>(r) * heads + h);
    }
  }
}

}  // namespace autotrain::kernels
