#pragma once
// The reducers of gradients.hpp, for the files that instantiate them with their Memory policy
// (gradients.cpp: HostMemory; gpu/memory.cpp: DeviceMemory<F> for each compute type F).
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
      grads_(memory_.wide().allocate(layout.padded_size())),
      shard_offsets_(shard_offsets(layout)),
      shard_(memory_.wide().allocate(scatter ? shard_offsets_.back() : 0)),
      buckets_(layout, bucket_elements, memory_, /*with_slots=*/widens<Memory>),
      handles_(static_cast<std::size_t>(layout.num_units())),
      launched_(buckets_.size(), false) {}

template <typename Memory>
auto ReplicatedGradients<Memory>::grads(int unit) -> F* {
  if constexpr (widens<Memory>) {
    // Nothing reads a slot once it is closed: accumulate() queued its add before.
    return buckets_.open(unit, [](std::size_t /*slot*/) {});
  } else {
    return Wide::data(grads_) + checked_unit(layout_, unit).offset;
  }
}

template <typename Memory>
void ReplicatedGradients<Memory>::grads_ready(int unit) {
  if constexpr (widens<Memory>) {
    // Every micro-step a complete bucket's slot is added (widened) into the kept gradients, which
    // the last micro-step then reduces.
    if (!buckets_.close(unit)) return;
    const std::size_t b = buckets_.bucket_of(unit);
    accumulate(b);
    if (last_micro_step_) launch(b);
  } else {
    checked_unit(layout_, unit);
    // Earlier micro-steps only accumulate locally: reducing a sum once equals summing reductions.
    if (!last_micro_step_) return;
    const std::size_t b = buckets_.bucket_of(unit);
    if (buckets_.unit_ready(b)) launch(b);
  }
}

template <typename Memory>
void ReplicatedGradients<Memory>::accumulate(std::size_t b) requires widens<Memory> {
  const UnitBucket& bucket = buckets_[b];
  AT_CHECK(!launched_[b], "ZeRO: gradients of units ", bucket.first_unit, "..", bucket.last_unit,
           " added after their reduction in this step (a micro-step after the one flagged last)");
  // Ordered after the bucket's backward and before whatever reuses the slot, so the slot is free
  // again as soon as this returns.
  memory_.add_widened(Wide::data(grads_) + bucket.offset, buckets_.contents(b), bucket.elements);
}

template <typename Memory>
void ReplicatedGradients<Memory>::launch(std::size_t b) {
  const UnitBucket& bucket = buckets_[b];
  memory_.before_collective(comm_);
  R* grads = Wide::data(grads_);
  if (scatter_) {
    const auto world = static_cast<std::size_t>(comm_.size());
    for (int u = bucket.first_unit; u <= bucket.last_unit; ++u) {
      const auto& unit = layout_.units()[static_cast<std::size_t>(u)];
      auto& handle = handles_[static_cast<std::size_t>(u)];
      handle = comm_.reduce_scatter_async(
          grads + unit.offset, Wide::data(shard_) + shard_offsets_[static_cast<std::size_t>(u)],
          unit.padded_numel / world, Wide::kDType, ReduceOp::avg);
      this->finalized(u, &handle);
    }
  } else {
    handles_[static_cast<std::size_t>(bucket.first_unit)] =
        comm_.allreduce_async(grads + bucket.offset, bucket.elements, Wide::kDType, ReduceOp::avg);
  }
  launched_[b] = true;
  buckets_.restart(b);
}

template <typename Memory>
void ReplicatedGradients<Memory>::finish() {
  buckets_.check_closed();
  // A bucket not launched yet (the trainer never flagged a last micro-step) goes now, in the
  // same order on every rank.
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    if (!launched_[b]) launch(b);
  }
  for (auto& handle : handles_) clock_.wait(handle);
}

template <typename Memory>
void ReplicatedGradients<Memory>::zero() {
  buckets_.check_closed();  // a slot left open would not be zeroed when backward reopens it
  for (auto& handle : handles_) clock_.wait(handle);
  memory_.wide().zero(Wide::data(grads_), layout_.padded_size());
  std::fill(launched_.begin(), launched_.end(), false);
  buckets_.restart_all();
  last_micro_step_ = true;
}

template <typename Memory>
auto ReplicatedGradients<Memory>::reduced(int unit, model::Range range) -> R* {
  checked_unit(layout_, unit);
  if (!scatter_) return Wide::data(grads_) + range.offset;
  return in_shard(Wide::data(shard_), shard_offsets_, layout_, rank_, unit, range);
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
      shard_(memory_.wide().allocate(shard_offsets_.back())),
      buckets_(layout, bucket_elements, memory_),
      in_flight_(buckets_.slots()) {
  const auto world = static_cast<std::size_t>(comm.size());
  for (std::size_t s = 0; s < in_flight_.size(); ++s) {
    const std::size_t capacity = buckets_.capacity(s);
    in_flight_[s].widened = memory_.wide().allocate(widens<Memory> ? capacity : 0);
    in_flight_[s].received = memory_.wide().allocate(capacity / world);
    in_flight_[s].handles.resize(static_cast<std::size_t>(layout.num_units()));
  }
}

template <typename Memory>
auto PartitionedGradients<Memory>::grads(int unit) -> F* {
  // The bounded working buffer: the slot's previous reductions come first (drain), so zeroing
  // it cannot race the collectives that read it (or, widened, the copy they read).
  return buckets_.open(unit, [this](std::size_t slot) { drain(in_flight_[slot]); });
}

template <typename Memory>
void PartitionedGradients<Memory>::grads_ready(int unit) {
  if (!buckets_.close(unit)) return;
  const std::size_t b = buckets_.bucket_of(unit);
  const UnitBucket& bucket = buckets_[b];
  InFlight& flight = in_flight_[buckets_.slot_of(b)];
  R* input = nullptr;  // the bucket as it is reduced
  if constexpr (widens<Memory>) {
    input = Wide::data(flight.widened);
    memory_.widen(input, buckets_.contents(b), bucket.elements);
  } else {
    input = buckets_.contents(b);
  }
  memory_.before_collective(comm_);
  // Each unit is its own reduce-scatter: a unit's parts are contiguous in the flat layout, so
  // no packing copy is needed, and units are large enough that fusing them would gain nothing.
  const auto world = static_cast<std::size_t>(comm_.size());
  for (int u = bucket.first_unit; u <= bucket.last_unit; ++u) {
    const auto& info = layout_.units()[static_cast<std::size_t>(u)];
    const std::size_t in_bucket = info.offset - bucket.offset;
    flight.handles[static_cast<std::size_t>(u)] = comm_.reduce_scatter_async(
        input + in_bucket, Wide::data(flight.received) + in_bucket / world,
        info.padded_numel / world, Wide::kDType, ReduceOp::avg);
  }
  flight.pending_bucket = static_cast<int>(b);
  flight.last_micro_step = last_micro_step_;
}

template <typename Memory>
void PartitionedGradients<Memory>::drain(InFlight& flight) {
  if (flight.pending_bucket < 0) return;
  const UnitBucket& bucket = buckets_[static_cast<std::size_t>(flight.pending_bucket)];
  const auto world = static_cast<std::size_t>(comm_.size());
  for (int u = bucket.first_unit; u <= bucket.last_unit; ++u) {
    memory_.before_use(flight.handles[static_cast<std::size_t>(u)], clock_);
    const auto& info = layout_.units()[static_cast<std::size_t>(u)];
    const R* part = Wide::data(flight.received) + (info.offset - bucket.offset) / world;
    R* shard = Wide::data(shard_) + shard_offsets_[static_cast<std::size_t>(u)];
    memory_.wide().add_into(shard, part, info.padded_numel / world);
    if (flight.last_micro_step) this->finalized(u, nullptr);
  }
  flight.pending_bucket = -1;
}

template <typename Memory>
void PartitionedGradients<Memory>::finish() {
  buckets_.check_closed();
  // Launch order, so a rank never waits on a later collective while an earlier one is queued.
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    InFlight& flight = in_flight_[buckets_.slot_of(b)];
    if (flight.pending_bucket == static_cast<int>(b)) drain(flight);
  }
  // Once per step the host waits for every reduction (the optimizer needs them anyway; on a
  // device drain() only made the stream wait), so no handle stays pending past the step: the
  // watchdog expects every handle waited within comm_timeout.
  for (auto& flight : in_flight_)
    for (auto& handle : flight.handles) clock_.wait(handle);
}

template <typename Memory>
void PartitionedGradients<Memory>::zero() {
  finish();
  memory_.wide().zero(Wide::data(shard_), shard_offsets_.back());
  last_micro_step_ = true;
}

template <typename Memory>
auto PartitionedGradients<Memory>::reduced(int unit, model::Range range) -> R* {
  checked_unit(layout_, unit);
  return in_shard(Wide::data(shard_), shard_offsets_, layout_, rank_, unit, range);
}

template <typename Memory>
std::size_t PartitionedGradients<Memory>::working_bytes() const {
  std::size_t bytes = buckets_.bytes();
  for (const auto& flight : in_flight_)
    bytes += Wide::bytes(flight.widened) + Wide::bytes(flight.received);
  return bytes;
}

}  // namespace autotrain::zero
