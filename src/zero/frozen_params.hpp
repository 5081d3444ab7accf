#pragma once
// Weights a model reads but never trains (LoRA's frozen base model), held by a ZeRO engine as its
// stage holds parameters (Engine::hold_frozen): whole under stages 0-2; under stage 3 only the
// rank's shard (the r-th equal part of every unit of a layout padded for the world), each unit
// all-gathered into a slot of a ParamGatherer of its own before use, prefetched along the hook
// order like the trainable units, and free again after release. No gradients, no optimizer
// state; the values never change after the fill, so no gather is ever invalidated.
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

class FrozenParams final : public model::UnitAccess {
 public:
  // `layout` is built for comm.size() ranks; it, `comm` and `clock` must outlive this. Fills the
  // weights this rank holds from `source` (stage 3: its shard, the values a single rank has).
  FrozenParams(const model::ParamLayout& layout, Communicator& comm, WaitClock& clock, int stage,
               int prefetch, const model::ParamSource& source);

  const float* params(int unit) override;
  void release(int unit) override;
  // An Error: frozen weights have no gradients (LoraAccess never asks).
  float* grads(int unit) override;
  bool frozen(int /*unit*/) const override { return true; }

  // A training micro-step starts: prefetch along the forward-then-backward sequence.
  void begin_training_micro_step();
  // The weights held (whole, or the shard) and the gather slots.
  std::size_t bytes() const;

 private:
  const model::ParamLayout& layout_;
  std::vector<float> values_;  // the whole flat buffer, or the shard in shard space (stage 3)
  std::unique_ptr<ParamGatherer<HostMemory>> gatherer_;  // stage 3
};

}  // namespace autotrain::zero
