#pragma once
// ZeRO stage 3 parameters on the device: the CPU ParamGatherer's scheme (the GatherSchedule of
// gather_schedule.hpp: its prefetch along the documented hook order, slot reuse and
// mispredictions) over prefetch + 1 device slots of the compute type F, each the size of the
// largest padded unit. A unit is all-gathered over NCCL from the rank's compute shard into a slot.
//
// Stream ordering (the model queues its kernels on `stream`; NCCL runs on the communicator's):
//   - every gather is issued right after comm.wait_for_stream(stream): it overwrites a slot only
//     after the kernels queued so far that read the slot's previous unit (release() comes right
//     after they are queued, not after they ran), and reads the shard only after the optimizer
//     step queued on the stream wrote it;
//   - acquire() makes `stream` wait for the unit's gather (an event; the host goes on), so the
//     kernels the model queues next read a complete slot while the host keeps queuing.
#ifdef AUTOTRAIN_HAVE_CUDA
#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

#include "autotrain/comm/communicator.hpp"
#include "autotrain/kernels/cuda/device.hpp"
#include "autotrain/model/param_layout.hpp"
#include "gather_schedule.hpp"
#include "wait_clock.hpp"

namespace autotrain::zero::gpu {

template <typename F>
class DeviceParamGatherer {
 public:
  // `shard` is the rank's compute shard in shard space (device memory; it must outlive this).
  DeviceParamGatherer(const model::ParamLayout& layout, Communicator& comm, WaitClock& clock,
                      const F* shard, int prefetch, cudaStream_t stream);
  DeviceParamGatherer(const DeviceParamGatherer&) = delete;  // the schedule calls back into this
  DeviceParamGatherer& operator=(const DeviceParamGatherer&) = delete;

  // The model's stream waits for the unit's gather (not the host), so the kernels the model
  // queues next read the whole unit.
  const F* acquire(int unit) { return buffers_[schedule_.acquire(unit)].template as<F>(); }
  void release(int unit) { schedule_.release(unit); }
  // A training micro-step starts: expect the forward-then-backward sequence.
  void begin_training_micro_step() { schedule_.begin_training_micro_step(); }
  // The shard is about to change (optimizer step, load): the host waits for the gathers in
  // flight (they read the shard) and every gathered unit is forgotten.
  void invalidate() { schedule_.invalidate(); }

  // Most units resident (gathered, being gathered or in use) at once since construction.
  int peak_resident_units() const { return schedule_.peak_resident_units(); }
  std::size_t bytes() const;

 private:
  CommHandle start_gather(std::size_t slot, int unit);

  const model::ParamLayout& layout_;
  Communicator& comm_;
  const F* shard_;
  cudaStream_t stream_;
  std::vector<std::size_t> shard_offsets_;
  // Declared before the schedule, so a gather still in flight is finished (its handle dropped)
  // before its buffer is freed. Per slot: one whole unit of those it may hold, padding included.
  std::vector<kernels::gpu::DeviceBuffer> buffers_;  // per slot: [capacity] F
  GatherSlots slots_;
  GatherSchedule schedule_;
};

}  // namespace autotrain::zero::gpu
#endif  // AUTOTRAIN_HAVE_CUDA
