#pragma once
// The gradients of a bf16/fp16 model on the device engine, reduced and accumulated in fp32
// (the CPU engine and an fp32 device model use gradients.hpp's reducers). Summing micro-steps or
// ranks in 8 or 11 bits loses the small contributions: at accumulation 8 each running sum is
// rounded 7 more times, and a contribution below half a unit in the last place of the sum
// vanishes. So, as Megatron's main_grad and DeepSpeed's bf16 optimizer do:
//
//   - backward writes a bucket of units (plan_buckets) into a working slot of type F, zeroed when
//     the bucket opens (buckets of blocks alternate between two slots; unit 0's, written by the
//     LM head first and the encoder last, has its own: plan_working_slots): each micro-step's
//     gradient is rounded to F once;
//   - stages 0 and 1: when a bucket is complete its slot is added (widened) into `acc`, the whole
//     gradient in fp32 (4 bytes a parameter, as the fp32 model's buffer), and the slot is free
//     again; on the last micro-step each bucket of `acc` is then allreduced (stage 0, avg, in
//     place) or reduce-scattered unit by unit into an fp32 shard (stage 1) as backward finishes it;
//   - stages 2 and 3: every micro-step a complete bucket is widened into the slot's fp32 copy and
//     reduce-scattered (avg) unit by unit into the slot's fp32 received part, which is added into
//     `acc`, the rank's fp32 shard (4 bytes a parameter over the world size), once the reduction
//     is done (the next time the slot opens, or at finish).
//
// The reductions therefore move fp32: twice the bytes of reducing F, for sums that lose nothing
// to the ranks' count. Ordering as in gradients.hpp: every collective is issued after
// comm.wait_for_stream(stream) (the kernels that wrote or widened its input), the model's stream
// waits for a reduction (an event) before adding what it received, and finish() waits on the
// host for every reduction of the step.
#ifdef AUTOTRAIN_HAVE_CUDA
#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

#include "../bucket_tracker.hpp"
#include "../gradients.hpp"
#include "../wait_clock.hpp"
#include "autotrain/comm/communicator.hpp"
#include "autotrain/core/gpu/device.hpp"
#include "autotrain/model/param_layout.hpp"

namespace autotrain::zero::gpu {

template <typename F>
class WideGradients final : public BasicGradientReducer<F, float> {
 public:
  // `stage` 0-3 as the engine's; `stream`: the model's stream, where the adds and widening run.
  WideGradients(const model::ParamLayout& layout, Communicator& comm, WaitClock& clock,
                std::size_t bucket_elements, int stage, cudaStream_t stream);
  F* grads(int unit) override;
  void grads_ready(int unit) override;
  void begin_micro_step(bool last_micro_step) override { last_micro_step_ = last_micro_step; }
  void finish() override;
  void zero() override;
  float* reduced(int unit, model::Range range) override;
  std::size_t persistent_bytes() const override { return acc_.bytes() + shard_.bytes(); }
  std::size_t working_bytes() const override;

 private:
  // A working buffer for one bucket at a time (gradients.hpp's PartitionedGradients has the
  // same): filled by backward (open_bucket); under stages 2-3 then reduced (pending_bucket) until
  // drain() adds the received parts into the shard.
  struct Slot {
    autotrain::gpu::DeviceBuffer buffer;    // [capacity] F: the bucket's units, as in the layout
    autotrain::gpu::DeviceBuffer wide;      // stages 2-3: [capacity] fp32, the reduced input
    autotrain::gpu::DeviceBuffer received;  // stages 2-3: [capacity / world] fp32
    std::vector<CommHandle> handles;        // per unit of the layout
    int open_bucket = -1;
    int pending_bucket = -1;
  };
  bool partitioned() const { return stage_ >= 2; }
  Slot& slot_of(std::size_t bucket) { return slots_[slot_of_bucket_[bucket]]; }
  void accumulate(Slot& slot, std::size_t bucket);  // stages 0-1
  void launch_replicated(std::size_t bucket);       // stages 0-1, the last micro-step
  void launch_partitioned(Slot& slot, std::size_t bucket);
  void drain(Slot& slot);

  const model::ParamLayout& layout_;
  Communicator& comm_;
  WaitClock& clock_;
  int stage_;
  cudaStream_t stream_;
  int rank_;
  std::size_t world_;
  std::vector<std::size_t> shard_offsets_;
  // fp32: the whole gradient [padded_size] under stages 0-1, the rank's shard (shard space)
  // under stages 2-3.
  autotrain::gpu::DeviceBuffer acc_;
  autotrain::gpu::DeviceBuffer shard_;  // stage 1: the reduced shard in fp32; else empty
  BucketTracker buckets_;
  std::vector<std::size_t> slot_of_bucket_;
  std::vector<Slot> slots_;
  std::vector<CommHandle> handles_;  // stages 0-1: per unit (an allreduce: its bucket's first)
  std::vector<bool> launched_;       // stages 0-1: per bucket, this step
  bool last_micro_step_ = true;
};

}  // namespace autotrain::zero::gpu
#endif  // AUTOTRAIN_HAVE_CUDA
