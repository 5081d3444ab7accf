#pragma once
// ZeRO stage 3 parameters: each rank keeps only its shard; a unit is all-gathered into one of
// prefetch + 1 slots just before the model uses it and the slot is free again after release.
// The whole model is never materialised: at most prefetch + 1 full units exist at a time.
//
// Prefetch follows the model's documented hook order (gpt2.hpp). In a training micro-step:
//   forward  0, 1, ..., L+1, 0        backward  0, L+1, L, ..., 1
// and in evaluation/inference the forward order repeats. After each params(u) the gatherer
// starts the gathers of the next `prefetch` units of that sequence, so they overlap the compute
// of u. A unit still in a slot is reused without communication (unit 0 ends forward and starts
// backward). A prediction that turns out wrong costs a wasted gather, never a wrong value:
// every request looks up its unit by number.
#include <cstddef>
#include <span>
#include <vector>

#include "autotrain/comm/communicator.hpp"
#include "autotrain/model/param_layout.hpp"
#include "wait_clock.hpp"

namespace autotrain::zero {

class ParamGatherer {
 public:
  // `shard` is the rank's shard of the parameters in shard space (it must outlive this object).
  ParamGatherer(const model::ParamLayout& layout, Communicator& comm, WaitClock& clock,
                std::span<const float> shard, int prefetch);

  const float* acquire(int unit);
  void release(int unit);
  // A training micro-step starts: expect the forward-then-backward sequence.
  void begin_training_micro_step();
  // The shard is about to change (optimizer step, load, init): finish in-flight gathers and
  // forget every gathered unit.
  void invalidate();

  // Most units resident (gathered, being gathered or in use) at once since construction.
  int peak_resident_units() const { return peak_resident_; }
  std::size_t bytes() const;

 private:
  struct Slot {
    std::vector<float> buffer;  // [max padded_numel] one whole unit, padding included
    int unit = -1;
    CommHandle gather;
    bool in_use = false;
    long long last_used = 0;
  };
  Slot* find(int unit);
  Slot* victim(std::span<const int> keep);
  void start_gather(Slot& slot, int unit);
  void advance(int unit);
  void prefetch_after(int unit);

  const model::ParamLayout& layout_;
  Communicator& comm_;
  WaitClock& clock_;
  std::span<const float> shard_;
  std::vector<std::size_t> shard_offsets_;
  int prefetch_;
  std::vector<Slot> slots_;
  std::vector<int> training_sequence_;  // forward then backward
  std::vector<int> forward_sequence_;   // repeats
  bool training_ = false;
  std::size_t position_ = 0;   // index of the next expected request in the current sequence
  std::vector<int> upcoming_;  // scratch: the predicted units (reserved, no allocation per call)
  long long clock_tick_ = 0;
  int peak_resident_ = 0;
};

}  // namespace autotrain::zero
