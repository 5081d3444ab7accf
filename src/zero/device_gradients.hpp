#pragma once
// The device engine's gradients (zero/device_engine.hpp): where backward accumulates them on the
// GPU and how they are averaged across ranks over NCCL, bucket by bucket as backward finishes
// units. The same two schemes as the CPU's gradients.hpp, in the compute type F:
//
//   DeviceReplicatedGradients (stages 0, 1)  [padded_size] F on every rank, reduced bucket by
//       bucket on the last micro-step: allreduced (avg) in place at stage 0, reduce-scattered
//       (avg) unit by unit into a [shard size] F buffer at stage 1 (a rank updates only its
//       shard).
//   DevicePartitionedGradients (stages 2, 3)  only the shard [shard size] F persists. Backward
//       writes a bucket into a working slot; when the bucket is complete each unit is
//       reduce-scattered (avg) into the slot's received part; draining the slot adds the parts
//       into the shard. Every micro-step, so accumulation happens in the shard. Two slots
//       alternate for block buckets, plus one for unit 0 (written twice, reduced last).
//
// Stream ordering (the model queues its kernels on `stream`; NCCL runs on the communicator's):
//   - every collective is issued right after comm.wait_for_stream(stream), so it reads a bucket
//     only after the backward kernels that wrote it, and overwrites a received part only after
//     the add kernels that read its previous contents;
//   - before queuing anything on `stream` that touches a slot (zeroing its buffer, adding its
//     received parts), `stream` is made to wait for the slot's collectives (events; the host
//     goes on), so those run after the collectives.
#ifdef AUTOTRAIN_HAVE_CUDA
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <type_traits>
#include <vector>

#include "autotrain/comm/communicator.hpp"
#include "autotrain/kernels/cuda/device.hpp"
#include "autotrain/model/param_layout.hpp"
#include "autotrain/zero/partition.hpp"
#include "bucket_tracker.hpp"
#include "wait_clock.hpp"

namespace autotrain::zero::gpu {

template <typename F>
constexpr DType compute_dtype() {
  if constexpr (std::is_same_v<F, float>) return DType::fp32;
  if constexpr (std::is_same_v<F, __nv_bfloat16>) return DType::bf16;
  return DType::fp16;
}

template <typename F>
class DeviceGradients {
 public:
  virtual ~DeviceGradients() = default;
  virtual F* grads(int unit) = 0;
  virtual void grads_ready(int unit) = 0;
  virtual void begin_micro_step(bool /*last_micro_step*/) {}
  // Every reduction of this step launched and waited for; work queued on the stream afterwards
  // sees the reduced gradients.
  virtual void finish() = 0;
  // finish(), then the kept gradients set to zero (queued on the stream).
  virtual void zero() = 0;
  // The reduced gradient of flat element `index` of `unit`, where `index` lies in what this rank
  // keeps (anywhere in the unit, or in shard(unit, rank)).
  virtual F* reduced(int unit, std::size_t index) = 0;
  virtual std::size_t persistent_bytes() const = 0;
  virtual std::size_t working_bytes() const = 0;
};

template <typename F>
class DeviceReplicatedGradients final : public DeviceGradients<F> {
 public:
  // `scatter`: stage 1's reduce-scatter into the shard instead of stage 0's allreduce.
  DeviceReplicatedGradients(const model::ParamLayout& layout, Communicator& comm, WaitClock& clock,
                            std::size_t bucket_elements, cudaStream_t stream, bool scatter);
  F* grads(int unit) override;
  void grads_ready(int unit) override;
  void begin_micro_step(bool last_micro_step) override { last_micro_step_ = last_micro_step; }
  void finish() override;
  void zero() override;
  F* reduced(int unit, std::size_t index) override;
  std::size_t persistent_bytes() const override { return grads_.bytes() + shard_.bytes(); }
  std::size_t working_bytes() const override { return 0; }

 private:
  void launch(std::size_t bucket);

  const model::ParamLayout& layout_;
  Communicator& comm_;
  WaitClock& clock_;
  cudaStream_t stream_;
  int rank_;
  bool scatter_;
  kernels::gpu::DeviceBuffer grads_;  // [padded_size] F
  std::vector<std::size_t> shard_offsets_;
  kernels::gpu::DeviceBuffer shard_;  // stage 1: [shard size] F, the reduced shard; else empty
  BucketTracker buckets_;             // units ready counted on the last micro-step
  std::vector<CommHandle> handles_;   // per unit (a bucket's allreduce: its first unit's)
  std::vector<bool> launched_;        // per bucket, this step
  bool last_micro_step_ = true;
};

template <typename F>
class DevicePartitionedGradients final : public DeviceGradients<F> {
 public:
  // During backward the stream, not the host, waits for the reductions (header comment);
  // finish() waits for them on the host too.
  DevicePartitionedGradients(const model::ParamLayout& layout, Communicator& comm, WaitClock& clock,
                             std::size_t bucket_elements, cudaStream_t stream);
  F* grads(int unit) override;
  void grads_ready(int unit) override;
  void finish() override;
  void zero() override;
  F* reduced(int unit, std::size_t index) override;
  std::size_t persistent_bytes() const override { return shard_.bytes(); }
  std::size_t working_bytes() const override;

 private:
  // A working slot for one bucket at a time: filled by backward (open_bucket), then reduced
  // (pending_bucket) until drain() adds the received parts into the shard.
  struct Slot {
    kernels::gpu::DeviceBuffer buffer;    // [capacity] F: the bucket's units, as in the flat buffer
    kernels::gpu::DeviceBuffer received;  // [capacity / world] F: this rank's part of each unit
    std::vector<CommHandle> handles;      // per unit of the layout
    int open_bucket = -1;
    int pending_bucket = -1;
  };
  Slot& slot_of(std::size_t bucket) { return slots_[slot_of_bucket_[bucket]]; }
  void drain(Slot& slot);

  const model::ParamLayout& layout_;
  Communicator& comm_;
  WaitClock& clock_;
  cudaStream_t stream_;
  int rank_;
  std::vector<std::size_t> shard_offsets_;
  kernels::gpu::DeviceBuffer shard_;  // [shard size] F in shard space, accumulated
  BucketTracker buckets_;
  std::vector<std::size_t> slot_of_bucket_;
  std::vector<Slot> slots_;
};

}  // namespace autotrain::zero::gpu
#endif  // AUTOTRAIN_HAVE_CUDA
