#pragma once
// ZeRO-Offload's gradients leave the device during backward: as soon as a unit's reduced fp32
// gradient of the rank's owned range is final (the reducer's on_final: its reduce-scatter
// launched at stage 1, its part added into the shard at stages 2-3), a copy stream waits for it
// (an event after the work queued on the model's stream, and the collective itself where one
// writes it) and copies it into a pinned host array over owned space, while backward goes on.
// The CPU step then waits for each unit's arrival (an event) instead of fetching gradients
// after backward. A unit not sent by then (a step whose last micro-step was never flagged) is
// sent when the step asks for it. Before the next step zeroes the device's gradients, the
// model's stream waits for every copy (end_step).
#ifdef AUTOTRAIN_HAVE_CUDA
#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <vector>

#include "autotrain/comm/communicator.hpp"
#include "autotrain/core/gpu/device.hpp"

namespace autotrain::zero::gpu {

class HostGradients {
 public:
  // The device's reduced gradient of `unit`'s owned range.
  using DeviceGrads = std::function<const float*(int unit)>;

  // `offsets`: per unit where its owned range starts in owned space, then the total.
  HostGradients(std::vector<std::size_t> offsets, DeviceGrads device, cudaStream_t stream);
  HostGradients(const HostGradients&) = delete;
  HostGradients& operator=(const HostGradients&) = delete;
  ~HostGradients();

  // `unit`'s reduced gradient is final for the work queued next on the model's stream (and,
  // where `writing` is given, once that collective is done): queue its copy to the host.
  void send(int unit, CommHandle* writing = nullptr);
  // Owned space on the host, `unit`'s part arrived (sent first where it was not).
  const float* wait(int unit);
  // The model's stream waits for every copy (its next work may overwrite the device's
  // gradients); the next step sends every unit again.
  void end_step();

  std::size_t pinned_bytes() const { return host_.size() * sizeof(float); }

 private:
  std::vector<std::size_t> offsets_;
  DeviceGrads device_;
  cudaStream_t stream_;  // the model's
  autotrain::gpu::Stream down_;
  autotrain::gpu::PinnedArray<float> host_;
  std::vector<autotrain::gpu::Event> arrived_;  // per unit
  std::vector<bool> sent_;                      // per unit, this step
  autotrain::gpu::Event final_;                 // on the model's stream, before a copy
  autotrain::gpu::Event copied_;                // on down_, after the step's copies
};

}  // namespace autotrain::zero::gpu
#endif  // AUTOTRAIN_HAVE_CUDA
