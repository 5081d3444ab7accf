#pragma once
// ZeRO stage 3 parameters: each rank keeps only its shard; a unit is all-gathered into one of
// prefetch + 1 slots just before the model uses it and the slot is free again after release.
// The whole model is never materialised: at most prefetch + 1 full units exist at a time. Which
// unit goes in which slot, the prefetch along the model's documented hook order and the reuse of
// a unit still in a slot are the GatherSchedule's (gather_schedule.hpp). One gatherer for both
// devices, over a Memory policy (memory.hpp): on the host acquire() waits for the unit's gather;
// on a device the model's stream waits (an event) and the host goes on, and every gather is
// issued after the kernels queued so far, so it overwrites a slot only after the kernels that
// read the slot's previous unit (release() comes when they are queued, not when they ran) and
// reads the shard only after the optimizer step queued before it.
#include <cstddef>
#include <utility>
#include <vector>

#include "autotrain/comm/communicator.hpp"
#include "autotrain/model/param_layout.hpp"
#include "autotrain/zero/partition.hpp"
#include "gather_schedule.hpp"
#include "memory.hpp"
#include "offloaded_shard.hpp"
#include "wait_clock.hpp"

namespace autotrain::zero {

template <typename Memory>
class ParamGatherer {
 public:
  using F = typename Memory::Element;
  // `shard` is the rank's shard of the parameters in shard space, where Memory keeps its buffers;
  // or, with `offloaded` (ZeRO-Infinity's offload_param: host memory or NVMe, `shard` unused),
  // each gather first copies the rank's part from there into the slot. Either must outlive this.
  ParamGatherer(const model::ParamLayout& layout, Communicator& comm, WaitClock& clock,
                const F* shard, int prefetch, Memory memory = {},
                OffloadedShard<F>* offloaded = nullptr)
      : layout_(layout),
        comm_(comm),
        memory_(std::move(memory)),
        shard_(shard),
        offloaded_(offloaded),
        shard_offsets_(shard_offsets(layout)),
        slots_(plan_gather_slots(layout, prefetch)),
        schedule_(
            layout.num_units(), layout.hook_order(), prefetch, slots_.large_units, clock,
            [this](std::size_t slot, int unit) { return start_gather(slot, unit); },
            memory_.consumer_stream()) {
    buffers_.reserve(schedule_.slots());
    for (std::size_t s = 0; s < schedule_.slots(); ++s) {
      buffers_.push_back(memory_.allocate(slots_.capacity(s)));
    }
  }
  ParamGatherer(const ParamGatherer&) = delete;  // the schedule calls back into this object
  ParamGatherer& operator=(const ParamGatherer&) = delete;

  const F* acquire(int unit) { return Memory::data(buffers_[schedule_.acquire(unit)]); }
  void release(int unit) { schedule_.release(unit); }
  // A training micro-step starts: expect the forward-then-backward sequence.
  void begin_training_micro_step() { schedule_.begin_training_micro_step(); }
  // The shard is about to change (optimizer step, load, init): the host waits for the gathers in
  // flight (they read the shard) and every gathered unit is forgotten.
  void invalidate() { schedule_.invalidate(); }

  // Most units resident (gathered, being gathered or in use) at once since construction.
  int peak_resident_units() const { return schedule_.peak_resident_units(); }
  std::size_t bytes() const {
    std::size_t bytes = 0;
    for (const auto& buffer : buffers_) bytes += Memory::bytes(buffer);
    return bytes;
  }

 private:
  CommHandle start_gather(std::size_t slot, int unit) {
    const std::size_t offset = shard_offsets_[static_cast<std::size_t>(unit)];
    F* whole = Memory::data(buffers_[slot]);
    const std::size_t size = layout_.shard(unit, 0).size;
    const F* part = nullptr;
    if (offloaded_ != nullptr) {  // into the slot, then gathered in place
      F* mine = whole + static_cast<std::size_t>(comm_.rank()) * size;
      offloaded_->copy_into(mine, offset, size);
      part = mine;
    } else {
      part = shard_ + offset;
    }
    memory_.before_collective(comm_);
    return comm_.allgather_async(part, whole, size, Memory::kDType);
  }

  const model::ParamLayout& layout_;
  Communicator& comm_;
  Memory memory_;
  const F* shard_;
  OffloadedShard<F>* offloaded_;
  std::vector<std::size_t> shard_offsets_;
  // Declared before the schedule, so a gather still in flight is finished (its handle dropped)
  // before its buffer is freed. Per slot: one whole unit of those it may hold, padding included.
  std::vector<typename Memory::Buffer> buffers_;
  GatherSlots slots_;
  GatherSchedule schedule_;
};

}  // namespace autotrain::zero
