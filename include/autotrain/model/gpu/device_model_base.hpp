#pragma once
// The device models' driver (model/gpu/gpt2.hpp, llama.hpp are its families): forward and
// backward of every decoder-only family written once, in the unit hook order of
// model/hook_order.hpp (the CPU driver's), with activation checkpointing's recompute of a block
// before its backward (model/recompute.hpp: the whole block, or its cheap tensors). It owns the
// head (the LM head, or a score head: model/config.hpp), the cross-entropy (or the scores) and its
// gradient, the losses copied back to pinned memory and their mean, the micro-batch shape and its
// checks, the tokens on their way to the device, the choice of attention path and the per-kernel
// profile; a family supplies its buffers (FamilyBuffers) and its parts: the embedding, a block, the
// final norm, forward and backward.
#ifdef AUTOTRAIN_HAVE_CUDA
#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "autotrain/core/gpu/device.hpp"
#include "autotrain/kernels/attention_choice.hpp"
#include "autotrain/kernels/gpu/matmul.hpp"
#include "autotrain/model/config.hpp"
#include "autotrain/model/gpu/causal_lm.hpp"
#include "autotrain/model/gpu/token_upload.hpp"
#include "autotrain/model/profile.hpp"
#include "autotrain/model/recompute.hpp"

namespace autotrain::model::gpu {

class EventProfiler;  // src/model/gpu/event_clock.hpp
class EventClock;     // src/model/gpu/event_clock.hpp

template <typename F>
class DeviceModelBase : public DeviceCausalLM<F> {
 public:
  ~DeviceModelBase() override;
  int batch_size() const override { return B_; }
  int seq_len() const override { return T_; }
  float loss() const override;
  std::span<const float> losses() const override;
  void set_profiling(bool on) override;
  std::vector<ProfileEntry> profile() const override;

  void forward_async(BasicUnitAccess<F>& access, const std::int32_t* inputs,
                     const std::int32_t* targets) final;
  void backward(BasicUnitAccess<F>& access, float loss_scale) final;
  void backward_weighted(BasicUnitAccess<F>& access, float loss_scale,
                         std::span<const float> weights) final;
  std::size_t activation_bytes() const final { return memory_.bytes() + family_.bytes; }

  // The driver's device memory for B sequences of T positions, computed on the host.
  static std::size_t driver_bytes(const ModelConfig& config, int B, int T);

 protected:
  // The driver's own buffers, carved from one allocation made at construction.
  struct DriverBuffers {
    std::int32_t *inputs, *targets;  // [B, T] copied from the host every forward
    std::int32_t* token_runs;        // [3·B·T + 1] the inputs' positions grouped by token
    F* logits;                       // [B, T, Vp] ([B, T] scores); dlogits once backward starts
    float *lse, *losses;             // [B, T]
    float* weights;                  // [B, T] backward_weighted's
  };
  // What the driver reads and writes of its family's buffers (the family's constructor sets it).
  struct FamilyBuffers {
    F* normed;          // [B, T, C] the final norm's output: the head's input
    F* dnormed;         // [B, T, C] its gradient
    std::size_t head;   // the head's offset in its unit
    std::size_t bytes;  // the family's device memory (activation_bytes)
  };

  // The family's parts, in the driver's order. Each queues its kernels on stream_; the block
  // passes lap `clock` after each kernel, the driver times the others.
  // Unit 0's parameters -> the stream into block 0.
  virtual void embed_forward(const F* p) = 0;
  // Block l, from the stream into it to the stream out of it (also the recompute before its
  // backward: the same kernels on the same inputs, the same bits), with the unit's linear
  // adapter (model/linear_adapter.hpp) after each linear when there is one.
  virtual void block_forward(int l, const F* p, BasicLinearAdapter<F>* adapter,
                             EventClock& clock) = 0;
  // Selective recompute: block l's cheap tensors (model/recompute.hpp: the norms' outputs and the
  // activation function's) from the tensors it kept, with the kernels its forward ran them with.
  virtual void block_recompute(int l, const F* p, EventClock& clock) = 0;
  // The last block's output -> DriverBuffers::normed.
  virtual void final_norm_forward(const F* p) = 0;
  // dnormed -> d(the last block's output), the residual stream's gradient, which it zeroes
  // first; g is null when the unit is frozen.
  virtual void final_norm_backward(const F* p, F* g) = 0;
  // d(the stream out of block l) -> d(the stream into it), gradients into g.
  virtual void block_backward(int l, const F* p, F* g, BasicLinearAdapter<F>* adapter,
                              EventClock& clock) = 0;
  // d(the stream into block 0) -> unit 0's gradients (`runs`: the inputs grouped by token).
  virtual void embed_backward(F* g, const kernels::gpu::TokenRuns& runs) = 0;

  // Checks B >= 1 and 1 <= T <= block_size (`positions_key`: config.json's name for it).
  DeviceModelBase(const ModelConfig& config, int B, int T, cudaStream_t stream,
                  const kernels::gpu::BlasHandle& blas, Recompute recompute,
                  const char* positions_key);
  // attention_: the path every layer runs (kernels::choose_attention): cuDNN's fused attention
  // where its plans build for every layer's shape (`shapes`: one per distinct set of layer
  // options; none in fp32), else our flash kernels where `flash_applies`, else the unfused path
  // (fast or reference), unless AUTOTRAIN_CUDA_ATTENTION asks for another; one log line says
  // which and why. cuDNN's plans and workspace are built here, before the first step.
  void choose_attention(bool flash_applies, const std::vector<kernels::SdpaShape>& shapes);
  // Flash or cuDNN: row statistics instead of the [B, NH, T, T] probabilities.
  bool fused_attention() const { return attention_ != kernels::AttentionPath::unfused; }
  // Whether choose_attention would take a fused path, decided without building cuDNN's plans:
  // where cuDNN is asked for and flash does not apply, the unfused path (the larger buffers).
  static bool plans_fused_attention(bool flash_applies);

  int B_;
  int T_;
  Recompute recompute_;
  cudaStream_t stream_;
  const kernels::gpu::BlasHandle& blas_;
  TokenUpload tokens_;  // inputs, targets and token runs on their way to the device
  autotrain::gpu::PinnedArray<float> host_losses_;   // [B, T]
  autotrain::gpu::Event losses_copied_;              // host_losses_ holds the last forward's
  autotrain::gpu::PinnedArray<float> host_weights_;  // [B, T] backward_weighted's, on their way
  autotrain::gpu::Event weights_copied_;             // host_weights_ may be written again
  bool ready_for_backward_ = false;
  std::size_t loss_positions_ = 0;  // targets of the last forward that carry loss
  kernels::AttentionPath attention_ = kernels::AttentionPath::unfused;
  std::unique_ptr<EventProfiler> profiler_;  // null when not profiling
  autotrain::gpu::DeviceBuffer memory_;      // driver_'s
  ModelConfig config_;
  DriverBuffers driver_{};
  FamilyBuffers family_{};

 private:
  // Carves the driver's buffers for `bt` tokens of `outputs` head outputs from `parts`; returns
  // the bytes taken.
  static std::size_t carve(DriverBuffers& driver, autotrain::gpu::SubBuffers parts, std::size_t bt,
                           std::size_t outputs);
  // logits = normed · head^T (then the final soft cap; the score head: the scores), from the
  // head's unit's parameters.
  void head_forward(const F* p, EventClock& clock);
  // d normed = dlogits · head; d head += dlogits^T · normed unless g is null (frozen).
  void head_backward(const F* p, F* g, EventClock& clock);
  // Backward with dloss the derivative of the objective by each position's loss, times
  // row_scale[position] (device memory) where given.
  void backward_rows(BasicUnitAccess<F>& access, float dloss, const float* row_scale);
  // The cross-entropy of every position into losses and lse (the score head: the marked
  // positions' scores), the losses copied to the host as they complete; backward may follow.
  void loss_forward(EventClock& clock);
};

}  // namespace autotrain::model::gpu
#endif  // AUTOTRAIN_HAVE_CUDA
