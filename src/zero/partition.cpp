#include "autotrain/zero/partition.hpp"

#include <algorithm>

#include "autotrain/core/error.hpp"

namespace autotrain::zero {

std::vector<ParamSegment> owned_segments(const model::ParamLayout& layout, model::Range range) {
  std::vector<ParamSegment> segments;
  const std::size_t begin = range.offset;
  const std::size_t end = range.offset + range.size;
  for (const auto& tensor : layout.tensors()) {
    const std::size_t lo = std::max(begin, tensor.offset);
    const std::size_t hi = std::min(end, tensor.offset + tensor.numel);
    if (lo < hi) segments.push_back({lo, hi, tensor.weight_decay});
  }
  return segments;
}

std::vector<std::size_t> shard_offsets(const model::ParamLayout& layout) {
  std::vector<std::size_t> offsets(static_cast<std::size_t>(layout.num_units()) + 1, 0);
  for (int u = 0; u < layout.num_units(); ++u) {
    offsets[static_cast<std::size_t>(u) + 1] =
        offsets[static_cast<std::size_t>(u)] + layout.shard(u, 0).size;
  }
  return offsets;
}

std::vector<UnitBucket> plan_buckets(const model::ParamLayout& layout,
                                     std::size_t bucket_elements) {
  AT_CHECK(bucket_elements >= 1, "reduce_bucket_size must be at least 1 element, got ",
           bucket_elements);
  const auto& units = layout.units();
  std::vector<UnitBucket> buckets;
  UnitBucket open;
  bool has_open = false;
  for (int u = layout.num_units() - 1; u >= 1; --u) {
    const auto& unit = units[static_cast<std::size_t>(u)];
    if (!has_open) {
      open = {u, u, unit.offset, 0};
      has_open = true;
    }
    open.first_unit = u;
    open.offset = unit.offset;
    open.elements += unit.padded_numel;
    if (open.elements >= bucket_elements) {
      buckets.push_back(open);
      has_open = false;
    }
  }
  if (has_open) buckets.push_back(open);
  buckets.push_back({0, 0, units[0].offset, units[0].padded_numel});
  return buckets;
}

}  // namespace autotrain::zero
