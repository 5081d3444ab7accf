#pragma once
// A bf16/fp16 model's gradient reducer on the device engine, for the stage the engine runs:
// zero/gradients.hpp's ReplicatedGradients (stages 0-1) or PartitionedGradients (stages 2-3) over
// DeviceMemory<F>, which reduces and accumulates them in fp32 (gradients.hpp says how and why).
// Only a choice by stage: the engine may build those reducers itself, as it does for an fp32
// model, and then this file goes.
#ifdef AUTOTRAIN_HAVE_CUDA
#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>

#include "../gradients.hpp"
#include "../wait_clock.hpp"
#include "autotrain/comm/communicator.hpp"
#include "autotrain/model/param_layout.hpp"

namespace autotrain::zero::gpu {

template <typename F>
class WideGradients final : public BasicGradientReducer<F, float> {
 public:
  // `stage` 0-3 as the engine's; `stream`: the model's stream, where the adds and widening run.
  WideGradients(const model::ParamLayout& layout, Communicator& comm, WaitClock& clock,
                std::size_t bucket_elements, int stage, cudaStream_t stream);
  F* grads(int unit) override { return stage_->grads(unit); }
  void grads_ready(int unit) override { stage_->grads_ready(unit); }
  void begin_micro_step(bool last) override { stage_->begin_micro_step(last); }
  void finish() override { stage_->finish(); }
  void zero() override { stage_->zero(); }
  float* reduced(int unit, model::Range range) override { return stage_->reduced(unit, range); }
  std::size_t persistent_bytes() const override { return stage_->persistent_bytes(); }
  std::size_t working_bytes() const override { return stage_->working_bytes(); }

 private:
  std::unique_ptr<BasicGradientReducer<F, float>> stage_;
};

}  // namespace autotrain::zero::gpu
#endif  // AUTOTRAIN_HAVE_CUDA
