#pragma once
// The bookkeeping of bucketed gradient reduction (the reducers of gradients.hpp): which bucket
// holds a unit, when backward has finished every unit of a bucket (so it can be launched), and
// which working slot backward writes a bucket into (working_buckets.hpp).
#include <cstddef>
#include <vector>

#include "autotrain/model/param_layout.hpp"
#include "autotrain/zero/partition.hpp"

namespace autotrain::zero {

// The layout's entry for `unit`, after checking that it is one.
const model::ParamUnit& checked_unit(const model::ParamLayout& layout, int unit);

class BucketTracker {
 public:
  // The buckets of plan_buckets(layout, bucket_elements), in launch order.
  BucketTracker(const model::ParamLayout& layout, std::size_t bucket_elements);

  std::size_t size() const { return buckets_.size(); }
  const UnitBucket& operator[](std::size_t b) const { return buckets_[b]; }
  const std::vector<UnitBucket>& buckets() const { return buckets_; }
  std::size_t bucket_of(int unit) const { return bucket_of_unit_[static_cast<std::size_t>(unit)]; }

  // Counts one more unit of bucket b ready. True when that was the bucket's last unit (the
  // bucket is complete and its count starts again from zero).
  bool unit_ready(std::size_t b);
  void restart(std::size_t b) { units_ready_[b] = 0; }
  void restart_all();

 private:
  std::vector<UnitBucket> buckets_;
  std::vector<std::size_t> bucket_of_unit_;
  std::vector<int> units_ready_;  // per bucket
};

// The working slots (working_buckets.hpp): buckets of blocks alternate between two slots
// (one filled by backward while the other is reduced); unit 0's bucket, the last, has its own.
struct WorkingSlots {
  std::vector<std::size_t> slot_of_bucket;  // per bucket
  std::vector<std::size_t> capacity;        // per slot, in elements: the largest bucket of its kind
};
WorkingSlots plan_working_slots(const std::vector<UnitBucket>& buckets);

}  // namespace autotrain::zero
