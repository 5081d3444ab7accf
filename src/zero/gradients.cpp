#include "gradients.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

#include "autotrain/core/error.hpp"

namespace autotrain::zero {
namespace {

// Where the reduced gradient of flat `range` of `unit` sits in a shard-space buffer; `range` must
// lie in this rank's shard of the unit.
float* in_shard(std::vector<float>& shard_space, const std::vector<std::size_t>& shard_offsets,
                const model::ParamLayout& layout, int rank, int unit, model::Range range) {
  const model::Range shard = layout.shard(unit, rank);
  AT_CHECK(range.offset >= shard.offset && range.offset + range.size <= shard.offset + shard.size,
           "ZeRO: gradients of [", range.offset, ", ", range.offset + range.size,
           ") are not in this rank's shard of unit ", unit);
  return shard_space.data() + shard_offsets[static_cast<std::size_t>(unit)] +
         (range.offset - shard.offset);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Stages 0 and 1.

ReplicatedGradients::ReplicatedGradients(const model::ParamLayout& layout, Communicator& comm,
                                         WaitClock& clock, std::size_t bucket_elements,
                                         bool scatter)
    : layout_(layout),
      comm_(comm),
      clock_(clock),
      rank_(comm.rank()),
      scatter_(scatter),
      grads_(layout.padded_size(), 0.0f),
      shard_offsets_(shard_offsets(layout)),
      shard_(scatter ? shard_offsets_.back() : 0, 0.0f),
      buckets_(layout, bucket_elements),
      handles_(static_cast<std::size_t>(layout.num_units())),
      launched_(buckets_.size(), false) {}

float* ReplicatedGradients::grads(int unit) {
  return grads_.data() + checked_unit(layout_, unit).offset;
}

void ReplicatedGradients::grads_ready(int unit) {
  checked_unit(layout_, unit);
  // Earlier micro-steps only accumulate locally: reducing a sum once equals summing reductions.
  if (!last_micro_step_) return;
  const std::size_t b = buckets_.bucket_of(unit);
  if (buckets_.unit_ready(b)) launch(b);
}

void ReplicatedGradients::launch(std::size_t b) {
  const UnitBucket& bucket = buckets_[b];
  if (scatter_) {
    const auto world = static_cast<std::size_t>(comm_.size());
    for (int u = bucket.first_unit; u <= bucket.last_unit; ++u) {
      const auto& unit = layout_.units()[static_cast<std::size_t>(u)];
      handles_[static_cast<std::size_t>(u)] = comm_.reduce_scatter_async(
          grads_.data() + unit.offset, shard_.data() + shard_offsets_[static_cast<std::size_t>(u)],
          unit.padded_numel / world, DType::fp32, ReduceOp::avg);
    }
  } else {
    handles_[static_cast<std::size_t>(bucket.first_unit)] = comm_.allreduce_async(
        grads_.data() + bucket.offset, bucket.elements, DType::fp32, ReduceOp::avg);
  }
  launched_[b] = true;
  buckets_.restart(b);
}

void ReplicatedGradients::finish() {
  // A bucket not launched yet (the trainer never flagged a last micro-step) goes now, in the
  // same order on every rank.
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    if (!launched_[b]) launch(b);
  }
  for (auto& handle : handles_) clock_.wait(handle);
}

void ReplicatedGradients::zero() {
  for (auto& handle : handles_) clock_.wait(handle);
  std::fill(grads_.begin(), grads_.end(), 0.0f);
  std::fill(launched_.begin(), launched_.end(), false);
  buckets_.restart_all();
  last_micro_step_ = true;
}

float* ReplicatedGradients::reduced(int unit, model::Range range) {
  checked_unit(layout_, unit);
  if (!scatter_) return grads_.data() + range.offset;
  return in_shard(shard_, shard_offsets_, layout_, rank_, unit, range);
}

// ---------------------------------------------------------------------------------------------
// Stages 2 and 3.

PartitionedGradients::PartitionedGradients(const model::ParamLayout& layout, Communicator& comm,
                                           WaitClock& clock, std::size_t bucket_elements)
    : layout_(layout),
      comm_(comm),
      clock_(clock),
      rank_(comm.rank()),
      shard_offsets_(shard_offsets(layout)),
      shard_(shard_offsets_.back(), 0.0f),
      buckets_(layout, bucket_elements) {
  WorkingSlots plan = plan_working_slots(buckets_.buckets());
  slot_of_bucket_ = std::move(plan.slot_of_bucket);
  slots_.resize(plan.capacity.size());
  const auto world = static_cast<std::size_t>(comm.size());
  for (std::size_t s = 0; s < slots_.size(); ++s) {
    slots_[s].buffer.assign(plan.capacity[s], 0.0f);
    slots_[s].received.assign(plan.capacity[s] / world, 0.0f);
    slots_[s].handles.resize(static_cast<std::size_t>(layout.num_units()));
  }
}

float* PartitionedGradients::grads(int unit) {
  const model::ParamUnit& info = checked_unit(layout_, unit);
  const std::size_t b = buckets_.bucket_of(unit);
  const UnitBucket& bucket = buckets_[b];
  Slot& slot = slot_of(b);
  if (slot.open_bucket != static_cast<int>(b)) {
    AT_CHECK(slot.open_bucket < 0, "ZeRO: gradients of unit ", unit,
             " requested while another bucket of its working buffer is still being filled "
             "(hooks out of the documented order)");
    // The bounded working buffer: wait for the reduction that used this slot before reusing it.
    drain(slot);
    std::fill_n(slot.buffer.begin(), bucket.elements, 0.0f);
    slot.open_bucket = static_cast<int>(b);
    buckets_.restart(b);
  }
  return slot.buffer.data() + (info.offset - bucket.offset);
}

void PartitionedGradients::grads_ready(int unit) {
  checked_unit(layout_, unit);
  const std::size_t b = buckets_.bucket_of(unit);
  const UnitBucket& bucket = buckets_[b];
  Slot& slot = slot_of(b);
  AT_CHECK(slot.open_bucket == static_cast<int>(b), "ZeRO: grads_ready(", unit, ") without grads(",
           unit, ") first");
  if (!buckets_.unit_ready(b)) return;
  // Each unit is its own reduce-scatter: a unit's parts are contiguous in the flat layout, so
  // no packing copy is needed, and units are large enough that fusing them would gain nothing.
  const auto world = static_cast<std::size_t>(comm_.size());
  for (int u = bucket.first_unit; u <= bucket.last_unit; ++u) {
    const auto& unit_info = layout_.units()[static_cast<std::size_t>(u)];
    const std::size_t in_bucket = unit_info.offset - bucket.offset;
    slot.handles[static_cast<std::size_t>(u)] = comm_.reduce_scatter_async(
        slot.buffer.data() + in_bucket, slot.received.data() + in_bucket / world,
        unit_info.padded_numel / world, DType::fp32, ReduceOp::avg);
  }
  slot.open_bucket = -1;
  slot.pending_bucket = static_cast<int>(b);
}

void PartitionedGradients::drain(Slot& slot) {
  if (slot.pending_bucket < 0) return;
  const UnitBucket& bucket = buckets_[static_cast<std::size_t>(slot.pending_bucket)];
  const auto world = static_cast<std::size_t>(comm_.size());
  for (int u = bucket.first_unit; u <= bucket.last_unit; ++u) {
    clock_.wait(slot.handles[static_cast<std::size_t>(u)]);
    const auto& unit_info = layout_.units()[static_cast<std::size_t>(u)];
    const float* part = slot.received.data() + (unit_info.offset - bucket.offset) / world;
    float* shard = shard_.data() + shard_offsets_[static_cast<std::size_t>(u)];
    const std::size_t count = unit_info.padded_numel / world;
#pragma omp parallel for simd schedule(static)
    for (std::size_t i = 0; i < count; ++i) shard[i] += part[i];
  }
  slot.pending_bucket = -1;
}

void PartitionedGradients::finish() {
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
}

void PartitionedGradients::zero() {
  finish();
  std::fill(shard_.begin(), shard_.end(), 0.0f);
}

float* PartitionedGradients::reduced(int unit, model::Range range) {
  checked_unit(layout_, unit);
  return in_shard(shard_, shard_offsets_, layout_, rank_, unit, range);
}

std::size_t PartitionedGradients::working_bytes() const {
  std::size_t bytes = 0;
  for (const auto& slot : slots_)
    bytes += (slot.buffer.size() + slot.received.size()) * sizeof(float);
  return bytes;
}

}  // namespace autotrain::zero
