#pragma once
// The ZeRO engine on one CUDA device (docs/gpu.md): the same contract as zero/engine.hpp's
// ModelState, with the model's units handed out as device memory of the compute type F (float,
// __nv_bfloat16, __half) through model::gpu::DeviceUnitAccess.
//
//   device memory   compute parameters [padded_size] F (what forward and backward read),
//                   gradients [padded_size] F, AdamW m and v fp32 over the owned ranges, and,
//                   when F is not float, fp32 master weights over the owned ranges (with F =
//                   float the compute parameters are the master weights).
//   stage 0         owned = every unit: gradients allreduced (avg) bucket by bucket on the
//                   last micro-step as backward finishes them, on the communicator's stream
//                   ordered after the model's stream; every rank updates everything.
//   stage 1         owned = the rank's shard: the same reductions; each rank updates its shard
//                   of the master weights and moments, then the compute parameters are
//                   all-gathered in place.
// Stages 2 and 3 are not on the device yet (create() refuses them, naming device cpu).
// Checkpoint runs (shard_runs/held_runs) point at pinned host copies: shard_runs() copies the
// device state there first; after_load() copies loaded values back and rebuilds the compute
// copy. Every device buffer is allocated by create(); the step allocates nothing.
#ifdef AUTOTRAIN_HAVE_CUDA
#include <cstddef>
#include <memory>

#include "autotrain/comm/communicator.hpp"
#include "autotrain/model/cuda/gpt2.hpp"
#include "autotrain/model/param_layout.hpp"
#include "autotrain/zero/engine.hpp"

namespace autotrain::zero::gpu {

template <typename F>
class DeviceEngine : public ModelState, public model::gpu::DeviceUnitAccess<F> {
 public:
  // `layout` with world_size = comm.size(); `comm` must be a device communicator (nccl);
  // `stream` is the model's stream (the optimizer runs on it too). Throws CollectiveError for
  // stages 2 and 3 and for the SGD optimizer.
  static std::unique_ptr<DeviceEngine> create(const model::ParamLayout& layout, Communicator& comm,
                                              const EngineOptions& options, cudaStream_t stream);

  // Bytes of device memory the engine holds.
  virtual std::size_t device_bytes() const = 0;
};

}  // namespace autotrain::zero::gpu
#endif  // AUTOTRAIN_HAVE_CUDA
