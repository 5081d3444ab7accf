#pragma once
// Which ZeRO stage 3 unit sits in which gather slot: the bookkeeping of the ParamGatherer
// (param_gatherer.hpp; host or device slots, by its memory policy). The owner keeps
// one buffer per slot and starts a gather when the schedule asks for one (StartGather); the
// schedule picks the slot, predicts what to gather ahead, and waits for gathers before a slot's
// unit is used or its buffer overwritten. At most prefetch + 1 full units exist at a time.
//
// Prefetch follows the model family's hook order (ParamLayout::hook_order()); GPT-2's training
// micro-step is forward 0, 1, ..., L+1, 0 then backward 0, L+1, L, ..., 1, and evaluation and
// inference run the forward order. After each acquire(u) the schedule starts the
// gathers of the next `prefetch` units of that sequence (never past its end), so they overlap
// the compute of u. A unit still in a slot is reused without communication (unit 0 ends forward and
// starts backward). A prediction that turns out wrong costs a wasted gather, never a wrong value:
// every request looks up its unit by number.
//
// Slot choice: a slot not in use and not holding a unit predicted next; empty slots first, then
// the least recently used. With `large_units` (the embeddings, unit 0, and an untied LM head)
// those units share slot 0 and the others the rest: plan_gather_slots() chooses that when it
// takes less memory (slots are sized to the units they can hold). The large units sit at the two
// ends of a pass and a model releases one before it asks for the next, so one slot serves them;
// a prefetch that finds it in use is simply not started.
#include <cstddef>
#include <functional>
#include <span>
#include <vector>

#include "autotrain/comm/communicator.hpp"
#include "autotrain/model/param_layout.hpp"
#include "wait_clock.hpp"

namespace autotrain::zero {

// The gather slots of a layout: prefetch + 1 slots of the largest unit, or, where it takes less
// memory, slot 0 for the large units (the embeddings, and an untied LM head larger than every
// block) and prefetch + 1 slots of the largest other unit. A model whose embeddings dominate
// (GPT-2's vocabulary on a narrow model, a Llama's 32000-token embeddings and head) then holds
// one copy of that size instead of prefetch + 1.
struct GatherSlots {
  std::vector<int> large_units;  // sharing slot 0; empty: every slot holds any unit
  std::size_t count = 0;
  std::size_t large_elements = 0;  // slot 0's capacity when there are large units
  std::size_t elements = 0;        // every other slot's
  std::size_t capacity(std::size_t slot) const {
    return !large_units.empty() && slot == 0 ? large_elements : elements;
  }
  std::size_t total() const;
};
GatherSlots plan_gather_slots(const model::ParamLayout& layout, int prefetch);

class GatherSchedule {
 public:
  // Starts gathering `unit` into the buffer of `slot` and returns the gather's handle. Called
  // only after the slot's previous gather is complete (its buffer is no longer being written).
  using StartGather = std::function<CommHandle(std::size_t slot, int unit)>;

  // min(prefetch + 1, num_units) slots: one for the unit in use, one per unit gathered ahead;
  // with `large_units`, slot 0 for them and min(prefetch + 1, num_units - their count) for the
  // rest. With a `consumer_stream` (the CUDA stream of the kernels that read the slots), acquire
  // orders that stream after the unit's gather instead of waiting on the host.
  GatherSchedule(int num_units, const model::HookOrder& order, int prefetch,
                 const std::vector<int>& large_units, WaitClock& clock, StartGather start_gather,
                 void* consumer_stream = nullptr);

  std::size_t slots() const { return slots_.size(); }
  // The slot whose buffer holds `unit`, completely gathered (the host waited, or the consumer
  // stream will); it stays in use until release(unit). Starts the gathers predicted next.
  std::size_t acquire(int unit);
  void release(int unit);
  // A training micro-step starts: expect the forward-then-backward sequence.
  void begin_training_micro_step();
  // What the gathers read is about to change: wait for those in flight and forget every unit.
  void invalidate();

  // Most units resident (gathered, being gathered or in use) at once since construction.
  int peak_resident_units() const { return peak_resident_; }

 private:
  struct Slot {
    int unit = -1;
    CommHandle gather;
    bool in_use = false;
    long long last_used = 0;
  };
  Slot* find(int unit);
  Slot* victim(std::span<const int> keep, int unit);
  void start_gather(Slot& slot, int unit);
  void advance(int unit);
  void prefetch_after(int unit);

  int num_units_;
  int prefetch_;
  std::vector<bool> large_;  // per unit: it lives in slot 0 (empty: no unit does)
  WaitClock& clock_;
  StartGather start_gather_;
  void* consumer_stream_;
  std::vector<Slot> slots_;
  std::vector<int> training_sequence_;  // forward then backward
  std::vector<int> forward_sequence_;   // evaluation and inference
  bool training_ = false;
  std::size_t position_ = 0;   // index of the next expected request in the current sequence
  std::vector<int> upcoming_;  // scratch: the predicted units (reserved, no allocation per call)
  long long clock_tick_ = 0;
  int peak_resident_ = 0;
};

}  // namespace autotrain::zero
