// A 16-bit model's gradients reduced and accumulated in fp32 (wide_gradients.hpp). Host code:
// the kernels it queues live in kernels/gpu/vector.
#include "wide_gradients.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <utility>

#include "../gradients_impl.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/gpu/check.hpp"
#include "autotrain/kernels/gpu/vector.hpp"
#include "autotrain/zero/partition.hpp"

namespace autotrain::zero::gpu {

using autotrain::gpu::DeviceBuffer;

namespace {

// A buffer's elements (a Slot's members are dependent names: buffer.as<T>() would need
// `template`).
template <typename T>
T* typed(DeviceBuffer& buffer) {
  return buffer.as<T>();
}

DeviceBuffer zeroed(std::size_t bytes, cudaStream_t stream) {
  DeviceBuffer buffer(bytes);
  buffer.zero(stream);
  return buffer;
}

}  // namespace

template <typename F>
WideGradients<F>::WideGradients(const model::ParamLayout& layout, Communicator& comm,
                                WaitClock& clock, std::size_t bucket_elements, int stage,
                                cudaStream_t stream)
    : layout_(layout),
      comm_(comm),
      clock_(clock),
      stage_(stage),
      stream_(stream),
      rank_(comm.rank()),
      world_(static_cast<std::size_t>(comm.size())),
      shard_offsets_(shard_offsets(layout)),
      acc_(zeroed((stage >= 2 ? shard_offsets_.back() : layout.padded_size()) * sizeof(float),
                  stream)),
      shard_(zeroed((stage == 1 ? shard_offsets_.back() : 0) * sizeof(float), stream)),
      buckets_(layout, bucket_elements),
      handles_(static_cast<std::size_t>(layout.num_units())),
      launched_(buckets_.size(), false) {
  WorkingSlots plan = plan_working_slots(buckets_.buckets());
  slot_of_bucket_ = std::move(plan.slot_of_bucket);
  slots_.resize(plan.capacity.size());
  for (std::size_t s = 0; s < slots_.size(); ++s) {
    const std::size_t capacity = plan.capacity[s];
    slots_[s].buffer = zeroed(capacity * sizeof(F), stream);
    if (partitioned()) {
      slots_[s].wide = DeviceBuffer(capacity * sizeof(float));
      slots_[s].received = DeviceBuffer(capacity / world_ * sizeof(float));
    }
    slots_[s].handles.resize(static_cast<std::size_t>(layout.num_units()));
  }
}

template <typename F>
F* WideGradients<F>::grads(int unit) {
  const model::ParamUnit& info = checked_unit(layout_, unit);
  const std::size_t b = buckets_.bucket_of(unit);
  const UnitBucket& bucket = buckets_[b];
  Slot& slot = slot_of(b);
  if (slot.open_bucket != static_cast<int>(b)) {
    AT_CHECK(slot.open_bucket < 0, "ZeRO: gradients of unit ", unit,
             " requested while another bucket of its working buffer is still being filled "
             "(hooks out of the documented order)");
    drain(slot);                // its reduction reads slot.wide, which the next widening overwrites
    if (bucket.elements > 0) {  // LoRA's adapters leave units without elements
      AT_CUDA_CHECK(cudaMemsetAsync(slot.buffer.data(), 0, bucket.elements * sizeof(F), stream_));
    }
    slot.open_bucket = static_cast<int>(b);
    buckets_.restart(b);
  }
  return typed<F>(slot.buffer) + (info.offset - bucket.offset);
}

template <typename F>
void WideGradients<F>::grads_ready(int unit) {
  checked_unit(layout_, unit);
  const std::size_t b = buckets_.bucket_of(unit);
  Slot& slot = slot_of(b);
  AT_CHECK(slot.open_bucket == static_cast<int>(b), "ZeRO: grads_ready(", unit, ") without grads(",
           unit, ") first");
  if (!buckets_.unit_ready(b)) return;
  slot.open_bucket = -1;
  if (partitioned()) {
    launch_partitioned(slot, b);
    return;
  }
  accumulate(slot, b);
  if (last_micro_step_) launch_replicated(b);
}

template <typename F>
void WideGradients<F>::accumulate(Slot& slot, std::size_t b) {
  const UnitBucket& bucket = buckets_[b];
  AT_CHECK(!launched_[b], "ZeRO: gradients of units ", bucket.first_unit, "..", bucket.last_unit,
           " added after their reduction in this step (a micro-step after the one flagged last)");
  // Queued on the model's stream after the bucket's backward kernels and before whatever reuses
  // the slot, so the slot is free again as soon as this returns.
  kernels::gpu::accumulate_into(acc_.as<float>() + bucket.offset, typed<F>(slot.buffer),
                                bucket.elements, stream_);
}

template <typename F>
void WideGradients<F>::launch_replicated(std::size_t b) {
  const UnitBucket& bucket = buckets_[b];
  comm_.wait_for_stream(stream_);
  float* acc = acc_.as<float>();
  if (stage_ == 1) {
    for (int u = bucket.first_unit; u <= bucket.last_unit; ++u) {
      const auto& unit = layout_.units()[static_cast<std::size_t>(u)];
      handles_[static_cast<std::size_t>(u)] = comm_.reduce_scatter_async(
          acc + unit.offset, shard_.as<float>() + shard_offsets_[static_cast<std::size_t>(u)],
          unit.padded_numel / world_, DType::fp32, ReduceOp::avg);
    }
  } else {
    handles_[static_cast<std::size_t>(bucket.first_unit)] =
        comm_.allreduce_async(acc + bucket.offset, bucket.elements, DType::fp32, ReduceOp::avg);
  }
  launched_[b] = true;
}

template <typename F>
void WideGradients<F>::launch_partitioned(Slot& slot, std::size_t b) {
  const UnitBucket& bucket = buckets_[b];
  kernels::gpu::cast_to_float(typed<float>(slot.wide), typed<F>(slot.buffer), bucket.elements,
                              stream_);
  comm_.wait_for_stream(stream_);
  for (int u = bucket.first_unit; u <= bucket.last_unit; ++u) {
    const auto& info = layout_.units()[static_cast<std::size_t>(u)];
    const std::size_t in_bucket = info.offset - bucket.offset;
    slot.handles[static_cast<std::size_t>(u)] = comm_.reduce_scatter_async(
        typed<float>(slot.wide) + in_bucket, typed<float>(slot.received) + in_bucket / world_,
        info.padded_numel / world_, DType::fp32, ReduceOp::avg);
  }
  slot.pending_bucket = static_cast<int>(b);
}

template <typename F>
void WideGradients<F>::drain(Slot& slot) {
  if (slot.pending_bucket < 0) return;
  const UnitBucket& bucket = buckets_[static_cast<std::size_t>(slot.pending_bucket)];
  for (int u = bucket.first_unit; u <= bucket.last_unit; ++u) {
    slot.handles[static_cast<std::size_t>(u)].order_before(stream_);
    const auto& info = layout_.units()[static_cast<std::size_t>(u)];
    const float* part = typed<float>(slot.received) + (info.offset - bucket.offset) / world_;
    float* shard = acc_.as<float>() + shard_offsets_[static_cast<std::size_t>(u)];
    kernels::gpu::add_into(shard, part, info.padded_numel / world_, stream_);
  }
  slot.pending_bucket = -1;
}

template <typename F>
void WideGradients<F>::finish() {
  for (auto& slot : slots_) {
    AT_CHECK(slot.open_bucket < 0, "ZeRO: backward ended with units ",
             buckets_[static_cast<std::size_t>(slot.open_bucket)].first_unit, "..",
             buckets_[static_cast<std::size_t>(slot.open_bucket)].last_unit,
             " never marked grads_ready");
  }
  // Launch order, so a rank never waits on a later collective while an earlier one is queued.
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    if (partitioned()) {
      Slot& slot = slot_of(b);
      if (slot.pending_bucket == static_cast<int>(b)) drain(slot);
    } else if (!launched_[b]) {
      launch_replicated(b);  // the trainer never flagged a last micro-step
    }
  }
  // The host waits once per step for every reduction (the watchdog expects each handle waited
  // within comm_timeout).
  for (auto& handle : handles_) clock_.wait(handle);
  for (auto& slot : slots_)
    for (auto& handle : slot.handles) clock_.wait(handle);
}

template <typename F>
void WideGradients<F>::zero() {
  finish();
  AT_CUDA_CHECK(cudaMemsetAsync(acc_.data(), 0, acc_.bytes(), stream_));
  std::fill(launched_.begin(), launched_.end(), false);
  buckets_.restart_all();
  last_micro_step_ = true;
}

template <typename F>
float* WideGradients<F>::reduced(int unit, model::Range range) {
  checked_unit(layout_, unit);
  if (stage_ == 0) return acc_.as<float>() + range.offset;
  float* shard_space = stage_ == 1 ? shard_.as<float>() : acc_.as<float>();
  return in_shard(shard_space, shard_offsets_, layout_, rank_, unit, range);
}

template <typename F>
std::size_t WideGradients<F>::working_bytes() const {
  std::size_t bytes = 0;
  for (const auto& slot : slots_)
    bytes += slot.buffer.bytes() + slot.wide.bytes() + slot.received.bytes();
  return bytes;
}

template class WideGradients<__nv_bfloat16>;
template class WideGradients<__half>;

}  // namespace autotrain::zero::gpu
