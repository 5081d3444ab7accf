#pragma once
// How the flat buffers are cut for ZeRO (DESIGN.md contract 1): which elements a rank owns, which
// of them the optimizer updates, and how units are grouped into gradient-reduction buckets.
//
// Flat buffer of a layout with world_size W (here W = 3, units padded to a multiple of W·align):
//
//   | unit 0 (embeddings)      | unit 1 (h.0)           | ... | unit L+1 (ln_f)   |
//   | r0 part | r1 part | r2 ~ | r0 part | r1 | r2 part~ | ... | r0 | r1 | r2 ~~~ |
//                         ~ = zero padding (never updated, never counted twice)
//
// Rank r's shard is the r-th part of every unit; in "shard space" (the rank's compact buffers of
// parameters, gradients and optimizer state) the parts follow each other in unit order.
#include <cstddef>
#include <vector>

#include "autotrain/model/param_layout.hpp"
#include "autotrain/optim/optimizer.hpp"

namespace autotrain::zero {

// The optimizer's ranges inside `range` of the flat buffer: the layout's tensors intersected
// with it, one segment per tensor piece (so the weight-decay flag is per tensor), padding left out.
std::vector<ParamSegment> owned_segments(const model::ParamLayout& layout, model::Range range);

// Start of each unit's part in shard space: shard_offsets[u] = sum of the parts of units < u.
// One more entry than units: the last is the shard's total size.
std::vector<std::size_t> shard_offsets(const model::ParamLayout& layout);

// Consecutive units whose gradients are reduced together, [first_unit, last_unit] ascending.
// Backward finishes units in descending order (L+1 .. 1, then 0), so a bucket is launched when
// grads_ready(first_unit) arrives.
struct UnitBucket {
  int first_unit = 0;
  int last_unit = 0;
  std::size_t offset = 0;    // flat offset of first_unit
  std::size_t elements = 0;  // padded elements of all its units
};

// Buckets in launch order: units L+1 downwards are added to a bucket until it holds at least
// `bucket_elements` (a unit is never split); unit 0 (the tied embeddings, whose gradients are
// complete only at the very end of backward) is always a bucket of its own, last.
std::vector<UnitBucket> plan_buckets(const model::ParamLayout& layout, std::size_t bucket_elements);

}  // namespace autotrain::zero
