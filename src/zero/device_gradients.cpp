// The device engine's gradient reductions (device_gradients.hpp). Host code: the kernels it
// queues live in kernels/cuda/vector.
#ifdef AUTOTRAIN_HAVE_CUDA
#include "device_gradients.hpp"

#include <algorithm>
#include <utility>

#include "autotrain/core/error.hpp"
#include "autotrain/kernels/cuda/check.hpp"
#include "autotrain/kernels/cuda/vector.hpp"

namespace autotrain::zero::gpu {
// ---------------------------------------------------------------------------------------------
// Stages 0 and 1.

template <typename F>
DeviceReplicatedGradients<F>::DeviceReplicatedGradients(const model::ParamLayout& layout,
                                                        Communicator& comm, WaitClock& clock,
                                                        std::size_t bucket_elements,
                                                        cudaStream_t stream, bool scatter)
    : layout_(layout),
      comm_(comm),
      clock_(clock),
      stream_(stream),
      rank_(comm.rank()),
      scatter_(scatter),
      grads_(layout.padded_size() * sizeof(F)),
      shard_offsets_(shard_offsets(layout)),
      shard_(scatter ? shard_offsets_.back() * sizeof(F) : 0),
      buckets_(layout, bucket_elements),
      handles_(static_cast<std::size_t>(layout.num_units())),
      launched_(buckets_.size(), false) {
  grads_.zero(stream_);
}

template <typename F>
F* DeviceReplicatedGradients<F>::grads(int unit) {
  return grads_.as<F>() + checked_unit(layout_, unit).offset;
}

template <typename F>
void DeviceReplicatedGradients<F>::grads_ready(int unit) {
  checked_unit(layout_, unit);
  // Earlier micro-steps only accumulate: reducing a sum once equals summing reductions.
  if (!last_micro_step_) return;
  const std::size_t b = buckets_.bucket_of(unit);
  if (buckets_.unit_ready(b)) launch(b);
}

template <typename F>
void DeviceReplicatedGradients<F>::launch(std::size_t b) {
  const UnitBucket& bucket = buckets_[b];
  comm_.wait_for_stream(stream_);  // after the backward kernels that wrote the bucket
  if (scatter_) {
    const auto world = static_cast<std::size_t>(comm_.size());
    for (int u = bucket.first_unit; u <= bucket.last_unit; ++u) {
      const auto& unit = layout_.units()[static_cast<std::size_t>(u)];
      handles_[static_cast<std::size_t>(u)] =
          comm_.reduce_scatter_async(grads_.as<F>() + unit.offset,
                                     shard_.as<F>() + shard_offsets_[static_cast<std::size_t>(u)],
                                     unit.padded_numel / world, compute_dtype<F>(), ReduceOp::avg);
    }
  } else {
    handles_[static_cast<std::size_t>(bucket.first_unit)] = comm_.allreduce_async(
        grads_.as<F>() + bucket.offset, bucket.elements, compute_dtype<F>(), ReduceOp::avg);
  }
  launched_[b] = true;
  buckets_.restart(b);
}

template <typename F>
void DeviceReplicatedGradients<F>::finish() {
  // A bucket not launched yet (no micro-step was flagged last) goes now, in the same order on
  // every rank.
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    if (!launched_[b]) launch(b);
  }
  // The host waits for the reductions, so everything queued on the stream afterwards sees them.
  for (auto& handle : handles_) clock_.wait(handle);
}

template <typename F>
void DeviceReplicatedGradients<F>::zero() {
  for (auto& handle : handles_) clock_.wait(handle);
  grads_.zero(stream_);
  std::fill(launched_.begin(), launched_.end(), false);
  buckets_.restart_all();
  last_micro_step_ = true;
}

template <typename F>
F* DeviceReplicatedGradients<F>::reduced(int unit, std::size_t index) {
  checked_unit(layout_, unit);
  if (!scatter_) return grads_.as<F>() + index;
  const model::Range shard = layout_.shard(unit, rank_);
  AT_CHECK(index >= shard.offset && index < shard.offset + shard.size, "ZeRO: gradient of element ",
           index, " is not in this rank's shard of unit ", unit, " [", shard.offset, ", ",
           shard.offset + shard.size, ")");
  return shard_.as<F>() + shard_offsets_[static_cast<std::size_t>(unit)] + (index - shard.offset);
}

// ---------------------------------------------------------------------------------------------
// Stages 2 and 3.

template <typename F>
DevicePartitionedGradients<F>::DevicePartitionedGradients(const model::ParamLayout& layout,
                                                          Communicator& comm, WaitClock& clock,
                                                          std::size_t bucket_elements,
                                                          cudaStream_t stream)
    : layout_(layout),
      comm_(comm),
      clock_(clock),
      stream_(stream),
      rank_(comm.rank()),
      shard_offsets_(shard_offsets(layout)),
      shard_(shard_offsets_.back() * sizeof(F)),
      buckets_(layout, bucket_elements) {
  WorkingSlots plan = plan_working_slots(buckets_.buckets());
  slot_of_bucket_ = std::move(plan.slot_of_bucket);
  slots_.resize(plan.capacity.size());
  const auto world = static_cast<std::size_t>(comm.size());
  for (std::size_t s = 0; s < slots_.size(); ++s) {
    slots_[s].buffer = kernels::gpu::DeviceBuffer(plan.capacity[s] * sizeof(F));
    slots_[s].received = kernels::gpu::DeviceBuffer(plan.capacity[s] / world * sizeof(F));
    slots_[s].handles.resize(static_cast<std::size_t>(layout.num_units()));
  }
  shard_.zero(stream_);
}

template <typename F>
F* DevicePartitionedGradients<F>::grads(int unit) {
  const model::ParamUnit& info = checked_unit(layout_, unit);
  const std::size_t b = buckets_.bucket_of(unit);
  const UnitBucket& bucket = buckets_[b];
  Slot& slot = slot_of(b);
  if (slot.open_bucket != static_cast<int>(b)) {
    AT_CHECK(slot.open_bucket < 0, "ZeRO: gradients of unit ", unit,
             " requested while another bucket of its working slot is still being filled "
             "(hooks out of the documented order)");
    // After drain() the stream waits for the slot's previous reductions, so zeroing it on the
    // stream cannot race the collectives that read it.
    drain(slot);
    AT_CUDA_CHECK(cudaMemsetAsync(slot.buffer.data(), 0, bucket.elements * sizeof(F), stream_));
    slot.open_bucket = static_cast<int>(b);
    buckets_.restart(b);
  }
  return slot.buffer.template as<F>() + (info.offset - bucket.offset);
}

template <typename F>
void DevicePartitionedGradients<F>::grads_ready(int unit) {
  checked_unit(layout_, unit);
  const std::size_t b = buckets_.bucket_of(unit);
  const UnitBucket& bucket = buckets_[b];
  Slot& slot = slot_of(b);
  AT_CHECK(slot.open_bucket == static_cast<int>(b), "ZeRO: grads_ready(", unit, ") without grads(",
           unit, ") first");
  if (!buckets_.unit_ready(b)) return;
  // After the backward kernels that wrote the bucket, and after the add kernels that read the
  // slot's received parts last time (both queued on the stream before this point).
  comm_.wait_for_stream(stream_);
  const auto world = static_cast<std::size_t>(comm_.size());
  for (int u = bucket.first_unit; u <= bucket.last_unit; ++u) {
    const auto& info = layout_.units()[static_cast<std::size_t>(u)];
    const std::size_t in_bucket = info.offset - bucket.offset;
    slot.handles[static_cast<std::size_t>(u)] =
        comm_.reduce_scatter_async(slot.buffer.template as<F>() + in_bucket,
                                   slot.received.template as<F>() + in_bucket / world,
                                   info.padded_numel / world, compute_dtype<F>(), ReduceOp::avg);
  }
  slot.open_bucket = -1;
  slot.pending_bucket = static_cast<int>(b);
}

template <typename F>
void DevicePartitionedGradients<F>::drain(Slot& slot) {
  if (slot.pending_bucket < 0) return;
  const UnitBucket& bucket = buckets_[static_cast<std::size_t>(slot.pending_bucket)];
  const auto world = static_cast<std::size_t>(comm_.size());
  for (int u = bucket.first_unit; u <= bucket.last_unit; ++u) {
    // The stream waits (not the host), so the add queued next on it reads the finished part.
    slot.handles[static_cast<std::size_t>(u)].order_before(stream_);
    const auto& info = layout_.units()[static_cast<std::size_t>(u)];
    const F* part = slot.received.template as<F>() + (info.offset - bucket.offset) / world;
    F* shard = shard_.as<F>() + shard_offsets_[static_cast<std::size_t>(u)];
    kernels::gpu::add_into(shard, part, info.padded_numel / world, stream_);
  }
  slot.pending_bucket = -1;
}

template <typename F>
void DevicePartitionedGradients<F>::finish() {
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
  // Once per step the host also waits for them (the optimizer needs them anyway), so no handle
  // stays pending past the step (the watchdog expects every handle waited within comm_timeout).
  for (auto& slot : slots_)
    for (auto& handle : slot.handles) clock_.wait(handle);
}

template <typename F>
void DevicePartitionedGradients<F>::zero() {
  finish();
  shard_.zero(stream_);
}

template <typename F>
F* DevicePartitionedGradients<F>::reduced(int unit, std::size_t index) {
  checked_unit(layout_, unit);
  const model::Range shard = layout_.shard(unit, rank_);
  AT_CHECK(index >= shard.offset && index < shard.offset + shard.size, "ZeRO: gradient of element ",
           index, " is not in this rank's shard of unit ", unit, " [", shard.offset, ", ",
           shard.offset + shard.size, ")");
  return shard_.as<F>() + shard_offsets_[static_cast<std::size_t>(unit)] + (index - shard.offset);
}

template <typename F>
std::size_t DevicePartitionedGradients<F>::working_bytes() const {
  std::size_t bytes = 0;
  for (const auto& slot : slots_) bytes += slot.buffer.bytes() + slot.received.bytes();
  return bytes;
}

template class DeviceReplicatedGradients<float>;
template class DeviceReplicatedGradients<__nv_bfloat16>;
template class DeviceReplicatedGradients<__half>;
template class DevicePartitionedGradients<float>;
template class DevicePartitionedGradients<__nv_bfloat16>;
template class DevicePartitionedGradients<__half>;

}  // namespace autotrain::zero::gpu
#endif  // AUTOTRAIN_HAVE_CUDA
