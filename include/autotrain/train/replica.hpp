#pragma once
// One rank's model and ZeRO engine on its device (`device: cpu|cuda`, docs/gpu.md): what the
// trainer, the evaluation and `bench train` drive, so none of them depends on where the kernels
// run. The CPU replica is the family's model::CausalLM over a zero::Engine; the CUDA replica
// (builds with CUDA) is the family's model::gpu::DeviceCausalLM over zero::gpu's device engine in
// the compute precision of mixed_precision.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "autotrain/comm/communicator.hpp"
#include "autotrain/model/config.hpp"
#include "autotrain/model/param_layout.hpp"
#include "autotrain/model/profile.hpp"
#include "autotrain/train/lora.hpp"
#include "autotrain/train/run_setup.hpp"
#include "autotrain/zero/engine.hpp"

namespace autotrain::train {

class Replica {
 public:
  virtual ~Replica() = default;

  // Parameters, gradients and optimizer state, and the step calls of zero/engine.hpp.
  virtual zero::ModelState& state() = 0;

  // Mean loss of one micro-batch [B, T] of host token ids over its targets that carry loss
  // (targets may be kIgnoreTarget); keeps what backward needs.
  virtual float forward(const std::int32_t* inputs, const std::int32_t* targets) = 0;
  // forward() without waiting for the loss, which last_loss() returns later. The GPU replica only
  // queues the work: queue backward before reading the loss and the device never idles while
  // the host queues kernels. The CPU computes everything here.
  virtual void forward_async(const std::int32_t* inputs, const std::int32_t* targets) = 0;
  virtual float last_loss() = 0;
  // Where the micro-batch of the next forward_async() lies in the data order: optimizer step
  // `step` (from 0), its first row the sample at `first_sample` of the step's global batch
  // (data/sampler.hpp: (micro-step · world_size + rank) · batch_size). LoRA's adapter dropout
  // draws its masks from it (model/lora_dropout.hpp: the same masks on any world size); forward()
  // (evaluation) never drops. Before the first call: step 0, sample 0.
  virtual void set_training_position(long long /*step*/, long long /*first_sample*/) {}
  // Adds d(loss_scale · mean loss)/d(params) into the engine's gradients.
  virtual void backward(float loss_scale) = 0;
  // Adds d(loss_scale · Σ weights[i] · losses()[i])/d(params), weights [B, T]: after forward()
  // and losses(), an objective the caller weighs per position (the preference losses).
  virtual void backward_weighted(float loss_scale, std::span<const float> weights) = 0;
  // Per-position losses [B, T] of the last forward, in host memory.
  virtual std::span<const float> losses() = 0;

  virtual std::size_t activation_bytes() const = 0;
  // Bytes of the frozen base weights (LoRA) this rank holds (under ZeRO-3 its shard and the
  // gather slots) and LoraAccess's scratch so far; 0 when every weight trains.
  virtual std::size_t frozen_bytes() const { return 0; }
  // Bytes this rank holds on its GPU (all of it allocated at construction); 0 on the CPU.
  virtual std::size_t device_memory_bytes() const { return 0; }
  // "cpu" or "cuda:<device> (<name>)", and the compute precision: "fp32", "bf16", "fp16".
  virtual std::string device() const = 0;
  virtual std::string precision() const = 0;
  // The device's dense peak FLOP/s in the compute precision (datasheet), for the MFU of
  // `bench train`; 0 when unknown (the CPU measures an sgemm instead).
  virtual double peak_flops_per_s() const { return 0; }

  // Per-kernel timers of the model (CPU: wall time per call; GPU: CUDA events around each call).
  virtual void set_profiling(bool /*on*/) {}
  virtual std::vector<model::ProfileEntry> profile() const { return {}; }
};

// The replica `setup` asks for (setup.device, setup.precision), with its engine's parameters
// not yet set (state().init_parameters or a checkpoint's load). With `lora` (CPU only), `layout`
// is its adapters' layout: the engine holds the adapters and, filled here from lora->weights,
// the frozen base weights (zero::Engine::hold_frozen: its shard of them under ZeRO-3), and the
// model runs over them through model::LoraAccess. `layout`, `comm` and `lora` must outlive it.
std::unique_ptr<Replica> make_replica(const RunSetup& setup, const model::ParamLayout& layout,
                                      Communicator& comm, int B, int T,
                                      const LoraModel* lora = nullptr);

}  // namespace autotrain::train
