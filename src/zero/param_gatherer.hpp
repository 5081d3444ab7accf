#pragma once
// ZeRO stage 3 parameters: each rank keeps only its shard; a unit is all-gathered into one of
// prefetch + 1 host slots just before the model uses it and the slot is free again after
// release. The whole model is never materialised: at most prefetch + 1 full units exist at a
// time. Which unit goes in which slot, the prefetch along the model's documented hook order and
// the reuse of a unit still in a slot are the GatherSchedule's (gather_schedule.hpp).
#include <cstddef>
#include <span>
#include <vector>

#include "autotrain/comm/communicator.hpp"
#include "autotrain/model/param_layout.hpp"
#include "gather_schedule.hpp"
#include "wait_clock.hpp"

namespace autotrain::zero {

class ParamGatherer {
 public:
  // `shard` is the rank's shard of the parameters in shard space (it must outlive this object).
  ParamGatherer(const model::ParamLayout& layout, Communicator& comm, WaitClock& clock,
                std::span<const float> shard, int prefetch);
  ParamGatherer(const ParamGatherer&) = delete;  // the schedule calls back into this object
  ParamGatherer& operator=(const ParamGatherer&) = delete;

  const float* acquire(int unit) { return buffers_[schedule_.acquire(unit)].data(); }
  void release(int unit) { schedule_.release(unit); }
  // A training micro-step starts: expect the forward-then-backward sequence.
  void begin_training_micro_step() { schedule_.begin_training_micro_step(); }
  // The shard is about to change (optimizer step, load, init): finish in-flight gathers and
  // forget every gathered unit.
  void invalidate() { schedule_.invalidate(); }

  // Most units resident (gathered, being gathered or in use) at once since construction.
  int peak_resident_units() const { return schedule_.peak_resident_units(); }
  std::size_t bytes() const;

 private:
  CommHandle start_gather(std::size_t slot, int unit);

  const model::ParamLayout& layout_;
  Communicator& comm_;
  std::span<const float> shard_;
  std::vector<std::size_t> shard_offsets_;
  // Declared before the schedule, so a gather still in flight is finished (its handle dropped)
  // before its buffer is freed.
  std::vector<std::vector<float>> buffers_;  // per slot: [capacity], padding included
  GatherSlots slots_;
  GatherSchedule schedule_;
};

}  // namespace autotrain::zero
