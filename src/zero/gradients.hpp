#pragma once
// Where backward accumulates gradients and how they are averaged across ranks, bucket by bucket
// as backward finishes units (so the reduction of one bucket overlaps the backward of the next).
// One state machine for both devices: the reducers are templates over a Memory policy (memory.hpp:
// HostMemory for the CPU engine; gpu/memory.hpp: DeviceMemory<F> for the device engine, in the
// compute type) that says where the buffers live and how to zero, add and order work there.
//
//   ReplicatedGradients (stages 0, 1)  the whole gradient buffer on every rank, where backward
//       accumulates; earlier micro-steps only accumulate. On the last micro-step of an optimizer
//       step each bucket (a contiguous run of units) is reduced as soon as its last unit is
//       ready: stage 0 allreduces it (avg) in place, since every rank updates everything;
//       stage 1 reduce-scatters (avg) each of its units into a shard-sized buffer, since a rank
//       updates only its shard (half the bytes of an allreduce: with the parameter all-gather
//       after the update, stage 1 moves what DDP moves).
//   PartitionedGradients (stages 2, 3)  only the rank's shard of the gradients persists. Backward
//       writes a unit into a working bucket buffer; when the bucket is complete each of its units
//       is reduce-scattered (avg) into a staging part, which is added into the shard once the
//       reduction is done. This happens every micro-step (as DeepSpeed does), so accumulation
//       happens in the shard. Two bucket buffers alternate (one filled by backward while the other
//       is reduced) plus one for unit 0, which backward writes twice (LM head first, encoder last)
//       and which is therefore reduced last, once, with both contributions.
//
// Ordering, through the policy: every collective is issued after memory.before_collective(comm)
// (on a device: after the backward kernels that wrote the bucket and the add kernels that last
// read its received part), and a received part is used only after memory.before_use(handle)
// (the host waits; on a device the stream waits and the host goes on). finish() waits for every
// reduction on the host, so no handle stays pending past a step.
#include <cstddef>
#include <vector>

#include "autotrain/comm/communicator.hpp"
#include "autotrain/model/param_layout.hpp"
#include "autotrain/zero/partition.hpp"
#include "bucket_tracker.hpp"
#include "memory.hpp"
#include "wait_clock.hpp"

namespace autotrain::zero {

// What an engine asks of its gradients, with pointers of element type F where the model runs;
// the reduced gradients have type R (F, or fp32 where gpu/wide_gradients.hpp reduces and
// accumulates a 16-bit model's gradients).
template <typename F, typename R = F>
class BasicGradientReducer {
 public:
  virtual ~BasicGradientReducer() = default;
  virtual F* grads(int unit) = 0;
  virtual void grads_ready(int unit) = 0;
  virtual void begin_micro_step(bool /*last_micro_step*/) {}
  // Every reduction of this step launched and waited for: the reduced gradients are in place
  // (on a device, for all work queued on the stream afterwards).
  virtual void finish() = 0;
  // finish(), then the kept gradients set to zero.
  virtual void zero() = 0;
  // The reduced gradient of flat element `range.offset` of `unit`, where `range` lies in what
  // this rank keeps (the whole buffer, or shard(unit, rank)).
  virtual R* reduced(int unit, model::Range range) = 0;
  virtual std::size_t persistent_bytes() const = 0;
  virtual std::size_t working_bytes() const = 0;
};

template <typename Memory>
class ReplicatedGradients final : public BasicGradientReducer<typename Memory::Element> {
 public:
  using F = typename Memory::Element;
  // `scatter`: stage 1's reduce-scatter into the shard instead of stage 0's allreduce.
  ReplicatedGradients(const model::ParamLayout& layout, Communicator& comm, WaitClock& clock,
                      std::size_t bucket_elements, bool scatter, Memory memory = {});
  F* grads(int unit) override;
  void grads_ready(int unit) override;
  void begin_micro_step(bool last_micro_step) override { last_micro_step_ = last_micro_step; }
  void finish() override;
  void zero() override;
  F* reduced(int unit, model::Range range) override;
  std::size_t persistent_bytes() const override {
    return Memory::bytes(grads_) + Memory::bytes(shard_);
  }
  std::size_t working_bytes() const override { return 0; }

 private:
  void launch(std::size_t bucket);

  const model::ParamLayout& layout_;
  Communicator& comm_;
  WaitClock& clock_;
  Memory memory_;
  int rank_;
  bool scatter_;
  typename Memory::Buffer grads_;  // [padded_size]
  std::vector<std::size_t> shard_offsets_;
  typename Memory::Buffer shard_;    // stage 1: the reduced shard, in shard space; else empty
  BucketTracker buckets_;            // units ready counted on the last micro-step
  std::vector<CommHandle> handles_;  // per unit (a bucket's allreduce: its first unit's)
  std::vector<bool> launched_;       // per bucket, this step
  bool last_micro_step_ = true;
};

template <typename Memory>
class PartitionedGradients final : public BasicGradientReducer<typename Memory::Element> {
 public:
  using F = typename Memory::Element;
  PartitionedGradients(const model::ParamLayout& layout, Communicator& comm, WaitClock& clock,
                       std::size_t bucket_elements, Memory memory = {});
  F* grads(int unit) override;
  void grads_ready(int unit) override;
  void finish() override;
  void zero() override;
  F* reduced(int unit, model::Range range) override;
  std::size_t persistent_bytes() const override { return Memory::bytes(shard_); }
  std::size_t working_bytes() const override;

 private:
  // A working buffer for one bucket at a time: filled by backward (open_bucket), then reduced
  // (pending_bucket) until drain() adds the received parts into the shard.
  struct Slot {
    typename Memory::Buffer buffer;    // [capacity]: the bucket's units, as in the flat buffer
    typename Memory::Buffer received;  // [capacity / world]: this rank's part of each of them
    std::vector<CommHandle> handles;   // per unit of the layout
    int open_bucket = -1;
    int pending_bucket = -1;
  };
  Slot& slot_of(std::size_t bucket) { return slots_[slot_of_bucket_[bucket]]; }
  void drain(Slot& slot);

  const model::ParamLayout& layout_;
  Communicator& comm_;
  WaitClock& clock_;
  Memory memory_;
  int rank_;
  std::vector<std::size_t> shard_offsets_;
  typename Memory::Buffer shard_;  // shard space: the rank's part of every unit, accumulated
  BucketTracker buckets_;
  std::vector<std::size_t> slot_of_bucket_;
  std::vector<Slot> slots_;
};

using GradientReducer = BasicGradientReducer<float>;

}  // namespace autotrain::zero
