#pragma once
// GPT-2 forward and backward on one CUDA device: the same model, ParamLayout and unit hook order
// as model/gpt2.hpp (read its contract), over device buffers of element type F (float,
// __nv_bfloat16 or __half: the compute precision of mixed_precision no|bf16|fp16; every kernel
// accumulates in fp32). The interface is gpu/causal_lm.hpp's.
//
// All device memory (activations, activation gradients, scratch, the token ids) is allocated at
// construction; forward() and backward() allocate nothing. Work is queued on the stream given at
// construction; forward() waits for it only to read the loss back.
#ifdef AUTOTRAIN_HAVE_CUDA
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "autotrain/core/gpu/device.hpp"
#include "autotrain/kernels/gpu/matmul.hpp"
#include "autotrain/model/gpt2_offsets.hpp"
#include "autotrain/model/gpu/causal_lm.hpp"
#include "autotrain/model/gpu/token_upload.hpp"
#include "autotrain/model/param_layout.hpp"
#include "autotrain/model/profile.hpp"
#include "autotrain/model/unit_access.hpp"

namespace autotrain::model::gpu {

class EventProfiler;  // src/model/gpu/event_clock.hpp
class EventClock;

template <typename F>
class DeviceGpt2 final : public DeviceCausalLM<F> {
 public:
  // Allocates everything one micro-batch [B, T] needs (T <= block_size) on the current device.
  // `recompute`: activation checkpointing (gpu/causal_lm.hpp); every per-layer activation but
  // the block outputs then has one slot.
  DeviceGpt2(const ParamLayout& layout, int B, int T, cudaStream_t stream,
             const kernels::gpu::BlasHandle& blas, bool recompute = false);
  ~DeviceGpt2() override;
  DeviceGpt2(const DeviceGpt2&) = delete;
  DeviceGpt2& operator=(const DeviceGpt2&) = delete;

  int batch_size() const override { return B_; }
  int seq_len() const override { return T_; }
  cudaStream_t stream() const { return stream_; }

  void forward_async(BasicUnitAccess<F>& access, const std::int32_t* inputs,
                     const std::int32_t* targets) override;
  float loss() const override;
  void backward(BasicUnitAccess<F>& access, float loss_scale) override;
  std::span<const float> losses() const override;
  std::size_t activation_bytes() const override;
  void set_profiling(bool on) override;
  std::vector<ProfileEntry> profile() const override;

 private:
  struct Buffers;
  // Block l from its input `residual` to its output (the training forward, and backward's
  // recomputation under activation checkpointing: the same kernels on the same inputs), with
  // the unit's linear adapter (model/linear_adapter.hpp) after each linear when there is one.
  void block_forward(int l, const F* p, BasicLinearAdapter<F>* adapter, const F* residual,
                     EventClock& clock);
  int B_;
  int T_;
  bool recompute_;
  cudaStream_t stream_;
  const kernels::gpu::BlasHandle& blas_;
  std::unique_ptr<Buffers> buffers_;
  TokenUpload tokens_;  // inputs, targets and token runs on their way to the device
  autotrain::gpu::PinnedArray<float> host_losses_;  // [B, T]
  autotrain::gpu::Event losses_copied_;             // host_losses_ holds the last forward's
  bool ready_for_backward_ = false;
  std::size_t loss_positions_ = 0;  // targets of the last forward that carry loss
  bool flash_ = false;  // flash attention (AUTOTRAIN_CUDA_ATTENTION=flash, where it applies)
  std::unique_ptr<EventProfiler> profiler_;  // null when not profiling
};

}  // namespace autotrain::model::gpu
#endif  // AUTOTRAIN_HAVE_CUDA
