#pragma once
// The buckets of gradients.hpp's reducers as backward fills them, and the working slots where it
// writes a bucket when it does not write into the kept gradients themselves (stages 2-3; stages
// 0-1 where the gradients are widened): slots of the type backward writes (Memory::Element),
// each holding one bucket at a time, zeroed when the bucket opens, so each micro-step's gradient
// is rounded to that type once. Which slot a bucket uses is plan_working_slots' (buckets of
// blocks alternate between two slots, one filled by backward while the other is reduced; unit
// 0's bucket, written by the LM head first and the encoder last, has its own).
#include <cstddef>
#include <utility>
#include <vector>

#include "autotrain/core/error.hpp"
#include "autotrain/model/param_layout.hpp"
#include "bucket_tracker.hpp"

namespace autotrain::zero {

template <typename Memory>
class WorkingBuckets : public BucketTracker {
 public:
  using F = typename Memory::Element;

  // `with_slots` false: the buckets' bookkeeping only (backward writes into the kept gradients).
  WorkingBuckets(const model::ParamLayout& layout, std::size_t bucket_elements, Memory memory,
                 bool with_slots = true)
      : BucketTracker(layout, bucket_elements), layout_(layout), memory_(std::move(memory)) {
    if (!with_slots) return;
    WorkingSlots plan = plan_working_slots(buckets());
    slot_of_bucket_ = std::move(plan.slot_of_bucket);
    capacity_ = std::move(plan.capacity);
    for (const std::size_t capacity : capacity_) slots_.push_back({memory_.allocate(capacity)});
  }

  std::size_t slots() const { return slots_.size(); }
  std::size_t slot_of(std::size_t bucket) const { return slot_of_bucket_[bucket]; }
  std::size_t capacity(std::size_t slot) const { return capacity_[slot]; }
  std::size_t bytes() const {
    std::size_t bytes = 0;
    for (const Slot& slot : slots_) bytes += Memory::bytes(slot.buffer);
    return bytes;
  }

  // Where backward writes `unit`: its bucket's slot, opened for the bucket if it is not yet. The
  // slot is zeroed then, on the policy's order, after release(slot), which must see to it that
  // nothing still reads the slot's previous bucket.
  template <typename Release>
  F* open(int unit, Release&& release) {
    const model::ParamUnit& info = checked_unit(layout_, unit);
    const std::size_t b = bucket_of(unit);
    const UnitBucket& bucket = (*this)[b];
    Slot& slot = slots_[slot_of(b)];
    if (slot.open_bucket != static_cast<int>(b)) {
      AT_CHECK(slot.open_bucket < 0, "ZeRO: gradients of unit ", unit,
               " requested while another bucket of its working buffer is still being filled "
               "(hooks out of the documented order)");
      std::forward<Release>(release)(slot_of(b));
      memory_.zero(Memory::data(slot.buffer), bucket.elements);
      slot.open_bucket = static_cast<int>(b);
      restart(b);
    }
    return Memory::data(slot.buffer) + (info.offset - bucket.offset);
  }

  // Backward finished `unit`: true when that completes its bucket, whose slot is closed then
  // (contents() holds the bucket until the slot opens again).
  bool close(int unit) {
    checked_unit(layout_, unit);
    const std::size_t b = bucket_of(unit);
    Slot& slot = slots_[slot_of(b)];
    AT_CHECK(slot.open_bucket == static_cast<int>(b), "ZeRO: grads_ready(", unit,
             ") without grads(", unit, ") first");
    if (!unit_ready(b)) return false;
    slot.open_bucket = -1;
    return true;
  }

  // Bucket b as backward wrote it in its slot: [elements], its units as in the flat buffer.
  F* contents(std::size_t bucket) { return Memory::data(slots_[slot_of(bucket)].buffer); }

  // Every bucket backward opened has been completed (a step's backward is over).
  void check_closed() const {
    for (const Slot& slot : slots_) {
      AT_CHECK(slot.open_bucket < 0, "ZeRO: backward ended with units ",
               (*this)[static_cast<std::size_t>(slot.open_bucket)].first_unit, "..",
               (*this)[static_cast<std::size_t>(slot.open_bucket)].last_unit,
               " never marked grads_ready");
    }
  }

 private:
  struct Slot {
    typename Memory::Buffer buffer;  // [capacity]: the open bucket's units, as in the flat buffer
    int open_bucket = -1;
  };

  const model::ParamLayout& layout_;
  Memory memory_;
  std::vector<std::size_t> slot_of_bucket_;  // per bucket
  std::vector<std::size_t> capacity_;        // per slot, in elements
  std::vector<Slot> slots_;
};

}  // namespace autotrain::zero
