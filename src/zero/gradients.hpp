#pragma once
// Where backward accumulates gradients and how they are averaged across ranks, bucket by bucket
// as backward finishes units (so the reduction of one bucket overlaps the backward of the next).
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
#include <cstddef>
#include <span>
#include <vector>

#include "autotrain/comm/communicator.hpp"
#include "autotrain/model/param_layout.hpp"
#include "autotrain/zero/partition.hpp"
#include "bucket_tracker.hpp"
#include "wait_clock.hpp"

namespace autotrain::zero {

class GradientReducer {
 public:
  virtual ~GradientReducer() = default;
  virtual float* grads(int unit) = 0;
  virtual void grads_ready(int unit) = 0;
  virtual void begin_micro_step(bool /*last_micro_step*/) {}
  // Every reduction of this step launched and complete; the reduced gradients are in place.
  virtual void finish() = 0;
  virtual void zero() = 0;
  // The reduced gradient of flat element `range.offset` of `unit`, where `range` lies in what
  // this rank keeps (the whole buffer, or shard(unit, rank)).
  virtual float* reduced(int unit, model::Range range) = 0;
  virtual std::size_t persistent_bytes() const = 0;
  virtual std::size_t working_bytes() const = 0;
};

class ReplicatedGradients final : public GradientReducer {
 public:
  // `scatter`: stage 1's reduce-scatter into the shard instead of stage 0's allreduce.
  ReplicatedGradients(const model::ParamLayout& layout, Communicator& comm, WaitClock& clock,
                      std::size_t bucket_elements, bool scatter);
  float* grads(int unit) override;
  void grads_ready(int unit) override;
  void begin_micro_step(bool last_micro_step) override { last_micro_step_ = last_micro_step; }
  void finish() override;
  void zero() override;
  float* reduced(int unit, model::Range range) override;
  std::size_t persistent_bytes() const override {
    return (grads_.size() + shard_.size()) * sizeof(float);
  }
  std::size_t working_bytes() const override { return 0; }

 private:
  void launch(std::size_t bucket);

  const model::ParamLayout& layout_;
  Communicator& comm_;
  WaitClock& clock_;
  int rank_;
  bool scatter_;
  std::vector<float> grads_;  // [padded_size]
  std::vector<std::size_t> shard_offsets_;
  std::vector<float> shard_;         // stage 1: the reduced shard, in shard space; else empty
  BucketTracker buckets_;            // units ready counted on the last micro-step
  std::vector<CommHandle> handles_;  // per unit (a bucket's allreduce: its first unit's)
  std::vector<bool> launched_;       // per bucket, this step
  bool last_micro_step_ = true;
};

class PartitionedGradients final : public GradientReducer {
 public:
  PartitionedGradients(const model::ParamLayout& layout, Communicator& comm, WaitClock& clock,
                       std::size_t bucket_elements);
  float* grads(int unit) override;
  void grads_ready(int unit) override;
  void finish() override;
  void zero() override;
  float* reduced(int unit, model::Range range) override;
  std::size_t persistent_bytes() const override { return shard_.size() * sizeof(float); }
  std::size_t working_bytes() const override;

 private:
  // A working buffer for one bucket at a time: filled by backward (open_bucket), then reduced
  // (pending_bucket) until drain() adds the received parts into the shard.
  struct Slot {
    std::vector<float> buffer;    // the bucket's units, as in the flat buffer
    std::vector<float> received;  // this rank's part of each of them, in unit order
    std::vector<CommHandle> handles;
    int open_bucket = -1;
    int pending_bucket = -1;
  };
  Slot& slot_of(std::size_t bucket) { return slots_[slot_of_bucket_[bucket]]; }
  void drain(Slot& slot);

  const model::ParamLayout& layout_;
  Communicator& comm_;
  WaitClock& clock_;
  int rank_;
  std::vector<std::size_t> shard_offsets_;
  std::vector<float> shard_;  // shard space: the rank's part of every unit, accumulated
  BucketTracker buckets_;
  std::vector<std::size_t> slot_of_bucket_;
  std::vector<Slot> slots_;
};

}  // namespace autotrain::zero
