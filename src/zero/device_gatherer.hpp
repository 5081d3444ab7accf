#pragma once
// ZeRO stage 3 parameters on the device: the CPU ParamGatherer's scheme (param_gatherer.hpp: its
// prefetch along the documented hook order, slot reuse and mispredictions) over prefetch + 1
// device slots of the compute type F, each the size of the largest padded unit. A unit is
// all-gathered over NCCL from the rank's compute shard into a slot.
//
// Stream ordering (the model queues its kernels on `stream`; NCCL runs on the communicator's):
//   - every gather is issued right after comm.wait_for_stream(stream): it overwrites a slot only
//     after the kernels queued so far that read the slot's previous unit (release() comes right
//     after they are queued, not after they ran), and reads the shard only after the optimizer
//     step queued on the stream wrote it;
//   - acquire() waits on the host for the unit's gather before returning, so the kernels the
//     model queues next read a complete slot.
#ifdef AUTOTRAIN_HAVE_CUDA
#include <cuda_runtime_api.h>

#include <cstddef>
#include <span>
#include <vector>

#include "autotrain/comm/communicator.hpp"
#include "autotrain/kernels/cuda/device.hpp"
#include "autotrain/model/param_layout.hpp"
#include "wait_clock.hpp"

namespace autotrain::zero::gpu {

template <typename F>
class DeviceParamGatherer {
 public:
  // `shard` is the rank's compute shard in shard space (device memory; it must outlive this).
  DeviceParamGatherer(const model::ParamLayout& layout, Communicator& comm, WaitClock& clock,
                      const F* shard, int prefetch, cudaStream_t stream);

  const F* acquire(int unit);
  void release(int unit);
  // A training micro-step starts: expect the forward-then-backward sequence.
  void begin_training_micro_step();
  // The shard is about to change (optimizer step, load): the host waits for the gathers in
  // flight (they read the shard) and every gathered unit is forgotten.
  void invalidate();

  // Most units resident (gathered, being gathered or in use) at once since construction.
  int peak_resident_units() const { return peak_resident_; }
  std::size_t bytes() const;

 private:
  struct Slot {
    kernels::gpu::DeviceBuffer buffer;  // [max padded_numel] F: one whole unit, padding included
    int unit = -1;
    CommHandle gather;
    bool in_use = false;
    long long last_used = 0;
  };
  Slot* find(int unit);
  Slot* victim(std::span<const int> keep);
  void start_gather(Slot& slot, int unit);
  void advance(int unit);
  void prefetch_after(int unit);

  const model::ParamLayout& layout_;
  Communicator& comm_;
  WaitClock& clock_;
  const F* shard_;
  cudaStream_t stream_;
  std::vector<std::size_t> shard_offsets_;
  int prefetch_;
  std::vector<Slot> slots_;
  std::vector<int> training_sequence_;  // forward then backward
  std::vector<int> forward_sequence_;   // repeats
  bool training_ = false;
  std::size_t position_ = 0;   // index of the next expected request in the current sequence
  std::vector<int> upcoming_;  // scratch: the predicted units (reserved, no allocation per call)
  long long clock_tick_ = 0;
  int peak_resident_ = 0;
};

}  // namespace autotrain::zero::gpu
#endif  // AUTOTRAIN_HAVE_CUDA
