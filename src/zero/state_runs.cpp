#include "state_runs.hpp"

#include <algorithm>

namespace autotrain::zero {

model::Range owned_range(const model::ParamLayout& layout, int stage, int rank, int unit) {
  if (stage == 0) {
    const auto& info = layout.units()[static_cast<std::size_t>(unit)];
    return {info.offset, info.padded_numel};
  }
  return layout.shard(unit, rank);
}

std::vector<TensorPiece> tensor_pieces(const model::ParamLayout& layout, int only_rank) {
  std::vector<TensorPiece> pieces;
  for (const auto& tensor : layout.tensors()) {
    const std::size_t end = tensor.offset + tensor.numel;
    for (int r = 0; r < layout.world_size(); ++r) {
      if (only_rank >= 0 && r != only_rank) continue;
      const model::Range part = layout.shard(tensor.unit, r);
      const std::size_t begin = std::max(tensor.offset, part.offset);
      const std::size_t stop = std::min(end, part.offset + part.size);
      if (begin < stop) pieces.push_back({tensor.unit, begin, stop});
    }
  }
  return pieces;
}

}  // namespace autotrain::zero
