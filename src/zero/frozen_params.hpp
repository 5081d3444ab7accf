#pragma once
// Weights a model reads but never trains (LoRA's frozen base model), held by a ZeRO engine as its
// stage holds parameters (Engine::hold_frozen, gpu::DeviceEngine::hold_frozen): whole under
// stages 0-2; under stage 3 only the rank's shard (the r-th equal part of every unit of a layout
// padded for the world), each unit all-gathered into a slot of a ParamGatherer of its own before
// use, prefetched along the hook order like the trainable units, and free again after release.
// No gradients, no optimizer state; the values never change after the fill, so no gather is ever
// invalidated. One class for both devices over a Memory policy (memory.hpp): fp32 host vectors on
// the CPU, the compute type on a GPU (a bf16 model keeps its frozen base in bf16).
//
// The gathers run on the engine's communicator, not a duplicate: the engine issues every
// collective (gradient reductions, the adapters' gathers and these) asynchronously from the
// model's thread, in an order given by the hook sequence alone, the same on every rank, and the
// communicator runs them one at a time in issue order (comm/communicator.hpp). So the frozen
// gathers interleave identically on every rank, are waited on through the engine's WaitClock
// (counted in its comm wait) and stay under the communicator's watchdog (comm_timeout). A
// second communicator would only let a frozen gather run beside a reduction, for another
// communication thread and watchdog.
#include <cstddef>
#include <memory>
#include <vector>

#include "autotrain/comm/communicator.hpp"
#include "autotrain/model/param_layout.hpp"
#include "autotrain/model/param_source.hpp"
#include "autotrain/model/unit_access.hpp"
#include "memory.hpp"
#include "param_gatherer.hpp"
#include "wait_clock.hpp"

namespace autotrain::zero {

// What an engine holds its frozen weights through: the weights in the compute type
// (BasicFrozenParams, below) or quantized (quantized_frozen.hpp).
template <typename F>
class BasicFrozenWeights : public model::BasicUnitAccess<F> {
 public:
  // A training micro-step starts: prefetch along the forward-then-backward sequence.
  virtual void begin_training_micro_step() = 0;
  // What this rank holds (whole, or the shard) and the buffers where the model reads a unit.
  virtual std::size_t bytes() const = 0;
  // The shard offloaded (ZeRO-Infinity's offload_param) to host memory or NVMe; 0 otherwise.
  virtual std::size_t host_bytes() const { return 0; }
  virtual std::size_t nvme_bytes() const { return 0; }
};

template <typename Memory>
class BasicFrozenParams final : public BasicFrozenWeights<typename Memory::Element> {
 public:
  using F = typename Memory::Element;
  // `layout` is built for comm.size() ranks; it, `comm` and `clock` must outlive this. Fills the
  // weights this rank holds from `source` (stage 3: its shard, the values a single rank has), a
  // unit at a time through a host buffer of fp32.
  // `offload` (stage 3, ZeRO-Infinity's offload_param): the shard made by it, in host memory or
  // on NVMe, each unit's part copied to its slot before the gather.
  BasicFrozenParams(const model::ParamLayout& layout, Communicator& comm, WaitClock& clock,
                    int stage, int prefetch, const model::ParamSource& source, Memory memory = {},
                    const ShardMaker<F>* offload = nullptr);

  const F* params(int unit) override;
  void release(int unit) override;
  // An Error: frozen weights have no gradients (LoraAccess never asks).
  F* grads(int unit) override;
  bool frozen(int /*unit*/) const override { return true; }

  void begin_training_micro_step() override;
  // The weights held (whole, or the shard) and the gather slots, where the model runs; the
  // shard in host memory.
  std::size_t bytes() const override;
  std::size_t host_bytes() const override { return offloaded_ ? offloaded_->host_bytes() : 0; }
  std::size_t nvme_bytes() const override { return offloaded_ ? offloaded_->nvme_bytes() : 0; }

 private:
  const model::ParamLayout& layout_;
  Memory memory_;
  typename Memory::Buffer values_;  // the whole flat buffer, or the shard in shard space (stage 3)
  std::unique_ptr<OffloadedShard<F>> offloaded_;     // the shard, with offload (values_ empty)
  std::unique_ptr<ParamGatherer<Memory>> gatherer_;  // stage 3
};

using FrozenParams = BasicFrozenParams<HostMemory>;

}  // namespace autotrain::zero
