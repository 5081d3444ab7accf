#include "bucket_tracker.hpp"

#include <algorithm>

#include "autotrain/core/error.hpp"

namespace autotrain::zero {

const model::ParamUnit& checked_unit(const model::ParamLayout& layout, int unit) {
  AT_CHECK(unit >= 0 && unit < layout.num_units(), "ZeRO: unit ", unit, " out of range [0, ",
           layout.num_units(), ")");
  return layout.units()[static_cast<std::size_t>(unit)];
}

BucketTracker::BucketTracker(const model::ParamLayout& layout, std::size_t bucket_elements)
    : buckets_(plan_buckets(layout, bucket_elements)),
      bucket_of_unit_(static_cast<std::size_t>(layout.num_units())),
      units_ready_(buckets_.size(), 0) {
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    for (int u = buckets_[b].first_unit; u <= buckets_[b].last_unit; ++u) {
      bucket_of_unit_[static_cast<std::size_t>(u)] = b;
    }
  }
}

bool BucketTracker::unit_ready(std::size_t b) {
  const UnitBucket& bucket = buckets_[b];
  if (++units_ready_[b] < bucket.last_unit - bucket.first_unit + 1) return false;
  units_ready_[b] = 0;
  return true;
}

void BucketTracker::restart_all() {
  std::fill(units_ready_.begin(), units_ready_.end(), 0);
}

WorkingSlots plan_working_slots(const std::vector<UnitBucket>& buckets) {
  const std::size_t block_buckets = buckets.size() - 1;
  const std::size_t block_slots = std::min<std::size_t>(2, block_buckets);
  WorkingSlots plan;
  plan.slot_of_bucket.resize(buckets.size());
  std::size_t block_capacity = 0;
  for (std::size_t b = 0; b < block_buckets; ++b) {
    plan.slot_of_bucket[b] = b % 2;
    block_capacity = std::max(block_capacity, buckets[b].elements);
  }
  plan.slot_of_bucket.back() = block_slots;
  plan.capacity.assign(block_slots, block_capacity);
  plan.capacity.push_back(buckets.back().elements);
  return plan;
}

}  // namespace autotrain::zero
