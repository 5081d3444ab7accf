#pragma once
// The Llama family (Llama, Mistral, Qwen2, Qwen3) forward and backward on one CUDA device: the
// CPU model of model/llama.hpp step for step (read its contract and hook order), over device
// buffers of element type F (float, __nv_bfloat16 or __half: the compute precision of
// mixed_precision no|bf16|fp16; every kernel accumulates in fp32). The interface is
// gpu/causal_lm.hpp's.
//
// All device memory (activations, activation gradients, scratch, the token ids, the rotary
// cos/sin tables) is allocated at construction; forward() and backward() allocate nothing. Work
// is queued on the stream given at construction; forward() waits for it only to read the loss.
#ifdef AUTOTRAIN_HAVE_CUDA
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "autotrain/core/gpu/device.hpp"
#include "autotrain/kernels/gpu/matmul.hpp"
#include "autotrain/model/gpu/device_model_base.hpp"
#include "autotrain/model/param_layout.hpp"
#include "autotrain/model/profile.hpp"
#include "autotrain/model/unit_access.hpp"

namespace autotrain::model::gpu {

class EventClock;  // src/model/gpu/event_clock.hpp

template <typename F>
class DeviceLlama final : public DeviceModelBase<F> {
 public:
  // Allocates everything one micro-batch [B, T] needs (T <= max_position_embeddings; a model
  // with a sliding_window refuses T beyond it, as the CPU model does) on the current device.
  // `recompute`: activation checkpointing (model/recompute.hpp); the per-layer activations it
  // recomputes then have one slot.
  DeviceLlama(const ParamLayout& layout, int B, int T, cudaStream_t stream,
              const kernels::gpu::BlasHandle& blas, Recompute recompute = Recompute::none);
  ~DeviceLlama() override;
  DeviceLlama(const DeviceLlama&) = delete;
  DeviceLlama& operator=(const DeviceLlama&) = delete;

  // The device memory a model of these B and T allocates (activation_bytes()), computed on the
  // host without allocating: the memory plan's activations on a GPU.
  static std::size_t planned_activation_bytes(const ParamLayout& layout, int B, int T,
                                              Recompute recompute);

  // The attention path the layers run (DeviceModelBase::choose_attention).
  kernels::AttentionPath attention_path() const { return attention_; }

 private:
  struct Buffers;  // src/model/gpu/llama_buffers.hpp
  // The driver's parts (gpu/device_model_base.hpp).
  void embed_forward(const F* p) override;
  void block_forward(int l, const F* p, BasicLinearAdapter<F>* adapter, EventClock& clock) override;
  void block_recompute(int l, const F* p, EventClock& clock) override;
  void final_norm_forward(const F* p) override;
  void final_norm_backward(const F* p, F* g) override;
  void block_backward(int l, const F* p, F* g, BasicLinearAdapter<F>* adapter,
                      EventClock& clock) override;
  void embed_backward(F* g, const kernels::gpu::TokenRuns& runs) override;

  using Base = DeviceModelBase<F>;  // its state, by name in this template
  using Base::B_, Base::T_, Base::stream_, Base::blas_, Base::attention_;
  std::unique_ptr<Buffers> buffers_;
};

}  // namespace autotrain::model::gpu
#endif  // AUTOTRAIN_HAVE_CUDA
