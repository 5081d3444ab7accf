#pragma once
// The ZeRO engine on one CUDA device (docs/gpu.md): the same contract as zero/engine.hpp's
// ModelState, with the model's units handed out as device memory of the compute type F (float,
// __nv_bfloat16, __half) through model::BasicUnitAccess.
//
//   device memory   compute parameters of type F (what forward and backward read), gradients
//                   of type F, AdamW m and v fp32 over the owned ranges, and, when F is not
//                   float, fp32 master weights over the owned ranges (with F = float the compute
//                   parameters are the master weights). owned = every unit under stage 0, the
//                   rank's shard under stages 1-3.
//   stage 0         full compute parameters and gradients [padded_size]: gradients allreduced
//                   (avg) bucket by bucket on the last micro-step as backward finishes them, on
//                   the communicator's stream ordered after the model's stream; every rank
//                   updates everything.
//   stage 1         the same reductions; each rank updates its shard of the master weights and
//                   moments, then the compute parameters are all-gathered in place.
//   stage 2         as stage 1, but only the shard of the gradients persists: every micro-step
//                   each bucket is written into a working slot (two alternate, one more for unit
//                   0), reduce-scattered (avg) unit by unit into a received part, and added into
//                   the shard once the host has waited for the reduction.
//   stage 3         gradients as stage 2; the compute parameters too are only the shard: each
//                   unit is all-gathered into one of stage3_prefetch + 1 slots before its use,
//                   the next unit of the documented hook order is gathered ahead, and every
//                   gather starts after the model's stream reached it (so it never overwrites a
//                   slot that queued kernels still read).
// The host waits on the collectives' handles before it queues work that reads their output;
// collectives wait for the model's stream with an event (Communicator::wait_for_stream).
// Checkpoint runs (shard_runs/held_runs, both the owned ranges) point at pageable host copies,
// filled through a fixed pinned staging buffer (autotrain::gpu::StagedCopy): shard_runs() copies
// the device state there first; after_load() copies loaded values back and
// rebuilds the compute copy. gather_unit() all-gathers the fp32 master of a unit into a scratch
// where the rank holds only its shard of it. Every device buffer is allocated by create() (but
// that export scratch, on the first export); the step allocates nothing.
#ifdef AUTOTRAIN_HAVE_CUDA
#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <optional>

#include "autotrain/comm/communicator.hpp"
#include "autotrain/model/param_layout.hpp"
#include "autotrain/model/param_source.hpp"
#include "autotrain/model/unit_access.hpp"
#include "autotrain/zero/engine.hpp"

namespace autotrain::zero::gpu {

template <typename F>
class DeviceEngine : public ModelState, public model::BasicUnitAccess<F> {
 public:
  // `layout` with world_size = comm.size(); `comm` must be a device communicator (nccl);
  // `stream` is the model's stream (the optimizer runs on it too). Throws CollectiveError for a
  // stage outside 0-3, a negative prefetch and the SGD optimizer.
  static std::unique_ptr<DeviceEngine> create(const model::ParamLayout& layout, Communicator& comm,
                                              const EngineOptions& options, cudaStream_t stream);

  // Bytes of device memory the engine holds (not the frozen weights).
  virtual std::size_t device_bytes() const = 0;

  // LoRA's frozen base model, held as the stage holds parameters (zero/engine.hpp's hold_frozen)
  // in device memory of type F: whole under stages 0-2, the rank's shard and gather slots under
  // stage 3 (gathered on the communicator's stream, prefetched along the hook order). `layout`
  // is the base model's, padded for comm.size(). Once per engine; the access serves params and
  // release, and lives as long as the engine.
  // With `quantization`, in 4 or 8 bits, dequantized on the stream at each use.
  virtual model::BasicUnitAccess<F>& hold_frozen(
      const model::ParamLayout& layout, const model::ParamSource& source,
      std::optional<model::QuantOptions> quantization) = 0;
  // Bytes of device memory the frozen weights take (0 before hold_frozen).
  virtual std::size_t frozen_bytes() const = 0;
};

}  // namespace autotrain::zero::gpu
#endif  // AUTOTRAIN_HAVE_CUDA
