#pragma once
// The reducers of gradients.hpp, for the files that instantiate them with their Memory policy
// (gradients.cpp: HostMemory; gpu/memory.cpp: DeviceMemory<F>).
#include <algorithm>
#include <utility>

#include "autotrain/core/error.hpp"
#include "gradients.hpp"

namespace autotrain::zero {

// Where the reduced gradient of flat `range` of `unit` sits in a shard-space buffer; `range` must
// lie in this rank's shard of the unit.
template <typename F>
F* in_shard(F* shard_space, const std::vector<std::size_t>& shard_offsets,
            const model::ParamLayout& layout, int rank, int unit, model::Range range) {
  const model::Range shard = layout.shard(unit, rank);
  AT_CHECK(range.offset >= shard.offset && range.offset + range.size <= shard.offset + shard.size,
           "ZeRO: gradients of [", range.offset, ", ", range.offset + range.size,
           ") are not in this rank's shard of unit ", unit, " [", shard.offset, ", ",
           shard.offset + shard.size, ")");
  return shard_space + shard_offsets[static_cast<std::size_t>(unit)] +
         (range.offset - shard.offset);
}

// ---------------------------------------------------------------------------------------------
// Stages 0 and 1.

template <typename Memory>
ReplicatedGradients<Memory>::ReplicatedGradients(const model::ParamLayout& layout,
                                                 Communicator& comm, WaitClock& clock,
                                                 std::size_t bucket_elements, bool scatter,
                                                 Memory memory)
    : layout_(layout),
      comm_(comm),
      clock_(clock),
      memory_(std::move(memory)),
      rank_(comm.rank()),
      scatter_(scatter),
      grads_(memory_.allocate(layout.padded_size())),
      shard_offsets_(shard_offsets(layout)),
      shard_(memory_.allocate(scatter ? shard_offsets_.back() : 0)),
      buckets_(layout, bucket_elements),
      handles_(static_cast<std::size_t>(layout.num_units())),
      launched_(buckets_.size(), false) {}

template <typename Memory>
auto ReplicatedGradients<Memory>::grads(int unit) -> F* {
  return Memory::data(grads_) + checked_unit(layout_, unit).offset;
}

template <typename Memory>
void ReplicatedGradients<Memory>::grads_ready(int unit) {
  checked_unit(layout_, unit);
  // Earlier micro-steps only accumulate locally: reducing a sum once equals summing reductions.
  if (!last_micro_step_) return;
  const std::size_t b = buckets_.bucket_of(unit);
  if (buckets_.unit_ready(b)) launch(b);
}

template <typename Memory>
void ReplicatedGradients<Memory>::launch(std::size_t b) {
  const UnitBucket& bucket = buckets_[b];
  memory_.before_collective(comm_);
  F* grads = Memory::data(grads_);
  if (scatter_) {
    const auto world = static_cast<std::size_t>(comm_.size());
    for (int u = bucket.first_unit; u <= bucket.last_unit; ++u) {
      const auto& unit = layout_.units()[static_cast<std::size_t>(u)];
      handles_[static_cast<std::size_t>(u)] = comm_.reduce_scatter_async(
          grads + unit.offset, Memory::data(shard_) + shard_offsets_[static_cast<std::size_t>(u)],
          unit.padded_numel / world, Memory::kDType, ReduceOp::avg);
    }
  } else {
    handles_[static_cast<std::size_t>(bucket.first_unit)] = comm_.allreduce_async(
        grads + bucket.offset, bucket.elements, Memory::kDType, ReduceOp::avg);
  }
  launched_[b] = true;
  buckets_.restart(b);
}

template <typename Memory>
void ReplicatedGradients<Memory>::finish() {
  // A bucket not launched yet (the trainer never flagged a last micro-step) goes now, in the
  // same order on every rank.
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    if (!launched_[b]) launch(b);
  }
  for (auto& handle : handles_) clock_.wait(handle);
}

template <typename Memory>
void ReplicatedGradients<Memory>::zero() {
  for (auto& handle : handles_) clock_.wait(handle);
  memory_.zero(Memory::data(grads_), layout_.padded_size());
  std::fill(launched_.begin(), launched_.end(), false);
  buckets_.restart_all();
  last_micro_step_ = true;
}

template <typename Memory>
auto ReplicatedGradients<Memory>::reduced(int unit, model::Range range) -> F* {
  checked_unit(layout_, unit);
  if (!scatter_) return Memory::data(grads_) + range.offset;
  return in_shard(Memory::data(shard_), shard_offsets_, layout_, rank_, unit, range);
}

// ---------------------------------------------------------------------------------------------
// Stages 2 and 3.

template <typename Memory>
PartitionedGradients<Memory>::PartitionedGradients(const model::ParamLayout& layout,
                                                   Communicator& comm, WaitClock& clock,
                                                   std::size_t bucket_elements, Memory memory)
    : layout_(layout),
      comm_(comm),
      clock_(clock),
      memory_(std::move(memory)),
      rank_(comm.rank()),
      shard_offsets_(shard_offsets(layout)),
      shard_(memory_.allocate(shard_offsets_.back())),
      buckets_(layout, bucket_elements) {
  WorkingSlots plan = plan_working_slots(buckets_.buckets());
  slot_of_bucket_ = std::move(plan.slot_of_bucket);
  slots_.resize(plan.capacity.size());
  const auto world = static_cast<std::size_t>(comm.size());
  for (std::size_t s = 0; s < slots_.size(); ++s) {
    slots_[s].buffer = memory_.allocate(plan.capacity[s]);
    slots_[s].received = memory_.allocate(plan.capacity[s] / world);
    slots_[s].handles.resize(static_cast<std::size_t>(layout.num_units()));
  }
}

template <typename Memory>
auto PartitionedGradients<Memory>::grads(int unit) -> F* {
  const model::ParamUnit& info = checked_unit(layout_, unit);
  const std::size_t b = buckets_.bucket_of(unit);
  const UnitBucket& bucket = buckets_[b];
  Slot& slot = slot_of(b);
  if (slot.open_bucket != static_cast<int>(b)) {
    AT_CHECK(slot.open_bucket < 0, "ZeRO: gradients of unit ", unit,
             " requested while another bucket of its working buffer is still being filled "
             "(hooks out of the documented order)");
    // The bounded working buffer: the slot's previous reductions come first (drain), so zeroing
    // it cannot race the collectives that read it.
    drain(slot);
    memory_.zero(Memory::data(slot.buffer), bucket.elements);
    slot.open_bucket = static_cast<int>(b);
    buckets_.restart(b);
  }
  return Memory::data(slot.buffer) + (info.offset - bucket.offset);
}

template <typename Memory>
void PartitionedGradients<Memory>::grads_ready(int unit) {
  checked_unit(layout_, unit);
  const std::size_t b = buckets_.bucket_of(unit);
  const UnitBucket& bucket = buckets_[b];
  Slot& slot = slot_of(b);
  AT_CHECK(slot.open_bucket == static_cast<int>(b), "ZeRO: grads_ready(", unit, ") without grads(",
           unit, ") first");
  if (!buckets_.unit_ready(b)) return;
  memory_.before_collective(comm_);
  // Each unit is its own reduce-scatter: a unit's parts are contiguous in the flat layout, so
  // no packing copy is needed, and units are large enough that fusing them would gain nothing.
  const auto world = static_cast<std::size_t>(comm_.size());
  for (int u = bucket.first_unit; u <= bucket.last_unit; ++u) {
    const auto& info = layout_.units()[static_cast<std::size_t>(u)];
    const std::size_t in_bucket = info.offset - bucket.offset;
    slot.handles[static_cast<std::size_t>(u)] = comm_.reduce_scatter_async(
        Memory::data(slot.buffer) + in_bucket, Memory::data(slot.received) + in_bucket / world,
        info.padded_numel / world, Memory::kDType, ReduceOp::avg);
  }
  slot.open_bucket = -1;
  slot.pending_bucket = static_cast<int>(b);
}

template <typename Memory>
void PartitionedGradients<Memory>::drain(Slot& slot) {
  if (slot.pending_bucket < 0) return;
  const UnitBucket& bucket = buckets_[static_cast<std::size_t>(slot.pending_bucket)];
  const auto world = static_cast<std::size_t>(comm_.size());
  for (int u = bucket.first_unit; u <= bucket.last_unit; ++u) {
    memory_.before_use(slot.handles[static_cast<std::size_t>(u)], clock_);
    const auto& info = layout_.units()[static_cast<std::size_t>(u)];
    const F* part = Memory::data(slot.received) + (info.offset - bucket.offset) / world;
    F* shard = Memory::data(shard_) + shard_offsets_[static_cast<std::size_t>(u)];
    memory_.add_into(shard, part, info.padded_numel / world);
  }
  slot.pending_bucket = -1;
}

template <typename Memory>
void PartitionedGradients<Memory>::finish() {
  for (auto& slot : slots_) {
    AT_CHECK(slot.open_bucket < 0, "ZeRO: backward ended with units ",
             buckets_[static_cast<std::size_t>(slot.open_bucket)].first_unit, "..",
             buckets_[static_cast<std::size_t>(slot.open_bucket)].last_unit,
             " never marked grads_ready");
  }
  // Launch order, so a rank never waits on a later collective while an earlier one is queued.
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    Slot& slot = slot_of(b);
    if (slot.pending_bucket == static_cast<int>(b)) drain(slot);
  }
  // Once per step the host waits for every reduction (the optimizer needs them anyway; on a
  // device drain() only made the stream wait), so no handle stays pending past the step: the
  // watchdog expects every handle waited within comm_timeout.
  for (auto& slot : slots_)
    for (auto& handle : slot.handles) clock_.wait(handle);
}

template <typename Memory>
void PartitionedGradients<Memory>::zero() {
  finish();
  memory_.zero(Memory::data(shard_), shard_offsets_.back());
}

template <typename Memory>
auto PartitionedGradients<Memory>::reduced(int unit, model::Range range) -> F* {
  checked_unit(layout_, unit);
  return in_shard(Memory::data(shard_), shard_offsets_, layout_, rank_, unit, range);
}

template <typename Memory>
std::size_t PartitionedGradients<Memory>::working_bytes() const {
  std::size_t bytes = 0;
  for (const auto& slot : slots_)
    bytes += Memory::bytes(slot.buffer) + Memory::bytes(slot.received);
  return bytes;
}

}  // namespace autotrain::zero
