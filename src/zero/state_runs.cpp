#include "state_runs.hpp"

#include <algorithm>

#include "autotrain/core/error.hpp"
#include "autotrain/zero/engine.hpp"

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

void StateRun::read(int kind, std::size_t at, std::span<float> out) const {
  AT_CHECK(at + out.size() <= size(), "state run [", begin, ", ", end, "): a read of ", out.size(),
           " elements at ", at, " lies past its end");
  if (const float* in_memory = data(kind)) {
    std::copy_n(in_memory + at, out.size(), out.begin());
    return;
  }
  const StreamedState& stream = streamed[static_cast<std::size_t>(kind)];
  AT_CHECK(stream, "state run [", begin, ", ", end, ") holds no state of kind ", kind);
  stream.read(at, out);
}

void StateRun::write(int kind, std::size_t at, std::span<const float> in) const {
  AT_CHECK(at + in.size() <= size(), "state run [", begin, ", ", end, "): a write of ", in.size(),
           " elements at ", at, " lies past its end");
  if (float* in_memory = data(kind)) {
    std::copy(in.begin(), in.end(), in_memory + at);
    return;
  }
  const StreamedState& stream = streamed[static_cast<std::size_t>(kind)];
  AT_CHECK(stream, "state run [", begin, ", ", end, ") holds no state of kind ", kind);
  stream.write(at, in);
}

}  // namespace autotrain::zero
