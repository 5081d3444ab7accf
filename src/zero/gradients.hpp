#pragma once
// Where backward accumulates gradients and how they are averaged across ranks, bucket by bucket
// as backward finishes units (so the reduction of one bucket overlaps the backward of the next).
// One state machine for both devices and every precision: the reducers are templates over a
// Memory policy (memory.hpp: HostMemory for the CPU engine; gpu/memory.hpp: DeviceMemory<F> for
// the device engine, in the compute type) that says where the buffers live, how to zero, add and
// order work there, and in which type R gradients are reduced and accumulated (Memory::Wide):
// backward's own type F (fp32), or fp32 for a bf16/fp16 model, whose gradients are widened.
//
//   ReplicatedGradients (stages 0, 1)  the whole gradient buffer on every rank, where backward
//       accumulates (a widened gradient through a working slot, below); earlier micro-steps only
//       accumulate. On the last micro-step of an optimizer step each bucket (a contiguous run of
//       units) is reduced as soon as its last unit is ready: stage 0 allreduces it (avg) in
//       place, since every rank updates everything; stage 1 reduce-scatters (avg) each of its
//       units into a shard-sized buffer, since a rank updates only its shard (half the bytes of
//       an allreduce: with the parameter all-gather after the update, stage 1 moves what DDP
//       moves).
//   PartitionedGradients (stages 2, 3)  only the rank's shard of the gradients persists. Backward
//       writes a unit into a working bucket buffer; when the bucket is complete each of its units
//       is reduce-scattered (avg) into a staging part, which is added into the shard once the
//       reduction is done. This happens every micro-step (as DeepSpeed does), so accumulation
//       happens in the shard. Two bucket buffers alternate (one filled by backward while the other
//       is reduced) plus one for unit 0, which backward writes twice (LM head first, encoder last)
//       and which is therefore reduced last, once, with both contributions (working_buckets.hpp).
//
// Widened gradients (a bf16/fp16 model on the device): summing micro-steps or ranks in 8 or 11
// bits loses the small contributions: at accumulation 8 each running sum is rounded 7 more times,
// and a contribution below half a unit in the last place of the sum vanishes. So, as Megatron's
// main_grad and DeepSpeed's bf16 optimizer do, they are reduced and accumulated in fp32:
//   - backward writes a bucket of units into a working slot of type F, zeroed when the bucket
//     opens (the slots PartitionedGradients writes into, here under every stage): each
//     micro-step's gradient is rounded to F once;
//   - stages 0 and 1: when a bucket is complete its slot is added (widened) into the whole
//     gradient buffer, in fp32 (4 bytes a parameter, as the fp32 model's buffer), and the slot is
//     free again; on the last micro-step each bucket of that buffer is then allreduced (stage 0,
//     avg, in place) or reduce-scattered unit by unit into an fp32 shard (stage 1) as backward
//     finishes it;
//   - stages 2 and 3: every micro-step a complete bucket is widened into the slot's fp32 copy and
//     reduce-scattered (avg) unit by unit into the slot's fp32 received part, which is added into
//     the rank's fp32 shard (4 bytes a parameter over the world size) once the reduction is done
//     (the next time the slot opens, or at finish).
// The reductions therefore move fp32: twice the bytes of reducing F, for sums that lose nothing to
// the ranks' count.
//
// A unit's reduced gradient is final (the last micro-step's reduction in it) at a point the
// reducer tells whoever asked (on_final, ZeRO-Offload's copy of the gradients to the host during
// backward): stage 1 when it launches the unit's reduce-scatter (the handle given: the result is
// there once the collective is), stages 2 and 3 when drain() has queued the add of the unit's
// part into the shard (work queued next on the device sees it). Each unit once a step, on the
// micro-step flagged last.
//
// Ordering, through the policy: every collective is issued after memory.before_collective(comm)
// (on a device: after the backward kernels that wrote the bucket, the kernels that widened it
// and the add kernels that last read its received part), and a received part is used only after
// memory.before_use(handle) (the host waits; on a device the stream waits and the host goes on).
// finish() waits for every reduction on the host, so no handle stays pending past a step.
#include <cstddef>
#include <functional>
#include <type_traits>
#include <vector>

#include "autotrain/comm/communicator.hpp"
#include "autotrain/model/param_layout.hpp"
#include "autotrain/zero/partition.hpp"
#include "memory.hpp"
#include "wait_clock.hpp"
#include "working_buckets.hpp"

namespace autotrain::zero {

// What an engine asks of its gradients, with pointers of element type F where the model runs;
// the reduced gradients have type R (F, or fp32 where a 16-bit model's gradients are widened).
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

  // Called when `unit`'s reduced gradient is final for this step: with the collective that
  // writes it (stage 1), or null where it is there for the work queued next (stages 2, 3).
  using FinalHook = std::function<void(int unit, CommHandle* writing)>;
  void on_final(FinalHook hook) { on_final_ = std::move(hook); }

 protected:
  void finalized(int unit, CommHandle* writing) {
    if (on_final_) on_final_(unit, writing);
  }

 private:
  FinalHook on_final_;
};

// A Memory policy's gradients: backward writes GradientOf (F, the policy's element); they are
// reduced and accumulated in ReducedOf (R, the element of Memory::Wide, the policy of their
// buffers); F is widened where the two differ.
template <typename Memory>
using GradientOf = typename Memory::Element;
template <typename Memory>
using ReducedOf = typename Memory::Wide::Element;
template <typename Memory>
inline constexpr bool widens = !std::is_same_v<GradientOf<Memory>, ReducedOf<Memory>>;
template <typename Memory>
using ReducerOf = BasicGradientReducer<GradientOf<Memory>, ReducedOf<Memory>>;

template <typename Memory>
class ReplicatedGradients final : public ReducerOf<Memory> {
 public:
  // `scatter`: stage 1's reduce-scatter into the shard instead of stage 0's allreduce.
  ReplicatedGradients(const model::ParamLayout& layout, Communicator& comm, WaitClock& clock,
                      std::size_t bucket_elements, bool scatter, Memory memory = {});
  GradientOf<Memory>* grads(int unit) override;
  void grads_ready(int unit) override;
  void begin_micro_step(bool last_micro_step) override { last_micro_step_ = last_micro_step; }
  void finish() override;
  void zero() override;
  ReducedOf<Memory>* reduced(int unit, model::Range range) override;
  std::size_t persistent_bytes() const override {
    return Wide::bytes(grads_) + Wide::bytes(shard_);
  }
  std::size_t working_bytes() const override { return buckets_.bytes(); }

 private:
  using F = GradientOf<Memory>;
  using R = ReducedOf<Memory>;
  using Wide = typename Memory::Wide;
  void accumulate(std::size_t bucket) requires widens<Memory>;
  void launch(std::size_t bucket);

  const model::ParamLayout& layout_;
  Communicator& comm_;
  WaitClock& clock_;
  Memory memory_;
  int rank_;
  bool scatter_;
  // [padded_size]: where backward accumulates, or where F is widened the sum of its buckets (the
  // slots added every micro-step).
  typename Wide::Buffer grads_;
  std::vector<std::size_t> shard_offsets_;
  typename Wide::Buffer shard_;  // stage 1: the reduced shard, in shard space; else empty
  // Slots only where F is widened; else units ready counted on the last micro-step only.
  WorkingBuckets<Memory> buckets_;
  std::vector<CommHandle> handles_;  // per unit (a bucket's allreduce: its first unit's)
  std::vector<bool> launched_;       // per bucket, this step
  bool last_micro_step_ = true;
};

template <typename Memory>
class PartitionedGradients final : public ReducerOf<Memory> {
 public:
  PartitionedGradients(const model::ParamLayout& layout, Communicator& comm, WaitClock& clock,
                       std::size_t bucket_elements, Memory memory = {});
  GradientOf<Memory>* grads(int unit) override;
  void grads_ready(int unit) override;
  void begin_micro_step(bool last_micro_step) override { last_micro_step_ = last_micro_step; }
  void finish() override;
  void zero() override;
  ReducedOf<Memory>* reduced(int unit, model::Range range) override;
  std::size_t persistent_bytes() const override { return Wide::bytes(shard_); }
  std::size_t working_bytes() const override;

 private:
  using F = GradientOf<Memory>;
  using R = ReducedOf<Memory>;
  using Wide = typename Memory::Wide;
  // A working slot's bucket from its reduction's launch (pending_bucket) until drain() adds the
  // received parts into the shard.
  struct InFlight {
    typename Wide::Buffer widened;    // where F is widened: [capacity], the reduced input
    typename Wide::Buffer received;   // [capacity / world]: this rank's part of each unit
    std::vector<CommHandle> handles;  // per unit of the layout
    int pending_bucket = -1;
    bool last_micro_step = false;  // the pending bucket's
  };
  void drain(InFlight& flight);

  const model::ParamLayout& layout_;
  Communicator& comm_;
  WaitClock& clock_;
  Memory memory_;
  int rank_;
  std::vector<std::size_t> shard_offsets_;
  typename Wide::Buffer shard_;  // shard space: the rank's part of every unit, accumulated
  WorkingBuckets<Memory> buckets_;
  std::vector<InFlight> in_flight_;  // per working slot
  bool last_micro_step_ = true;
};

using GradientReducer = BasicGradientReducer<float>;

}  // namespace autotrain::zero
