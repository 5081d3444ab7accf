#pragma once
// How the CPU engine (engine.cpp) and the device engine (gpu/engine.cpp) see their part of
// the flat buffer: the range each unit's optimizer owns, and the cutting of tensors into the
// pieces that checkpoints exchange as StateRuns (each piece in one rank's part of its unit, so
// in one shard and one optimizer segment).
#include <cstddef>
#include <vector>

#include "autotrain/model/param_layout.hpp"

namespace autotrain::zero {

// The range the optimizer of `unit` updates on `rank`: the whole padded unit under stage 0,
// shard(unit, rank) under stages 1-3.
model::Range owned_range(const model::ParamLayout& layout, int stage, int rank, int unit);

// [begin, end) of the flat buffer: one tensor's elements inside one rank's part of its unit.
struct TensorPiece {
  int unit = 0;
  std::size_t begin = 0;
  std::size_t end = 0;
};

// Every tensor cut at the rank-part boundaries of its unit, in tensor order and, within a
// tensor, rank order; only_rank >= 0 keeps that rank's pieces only. Padding is in no piece.
std::vector<TensorPiece> tensor_pieces(const model::ParamLayout& layout, int only_rank);

}  // namespace autotrain::zero
