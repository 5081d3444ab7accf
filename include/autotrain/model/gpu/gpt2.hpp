#pragma once
// GPT-2 forward and backward on one CUDA device: the same model, ParamLayout and unit hook order
// as model/gpt2.hpp (read its contract), over device buffers of element type F (float,
// __nv_bfloat16 or __half: the compute precision of mixed_precision no|bf16|fp16; every kernel
// accumulates in fp32).
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
#include "autotrain/model/param_layout.hpp"
#include "autotrain/model/profile.hpp"
#include "autotrain/model/unit_access.hpp"

namespace autotrain::model::gpu {

template <typename F>
class DeviceGpt2 {
 public:
  // Allocates everything one micro-batch [B, T] needs (T <= block_size) on the current device.
  DeviceGpt2(const ParamLayout& layout, int B, int T, cudaStream_t stream,
             const kernels::gpu::BlasHandle& blas);
  ~DeviceGpt2();
  DeviceGpt2(const DeviceGpt2&) = delete;
  DeviceGpt2& operator=(const DeviceGpt2&) = delete;

  int batch_size() const { return B_; }
  int seq_len() const { return T_; }
  cudaStream_t stream() const { return stream_; }

  // inputs, targets: [B, T] token ids in host memory (checked, then staged through pinned
  // memory: the caller may reuse them on return). Queues the forward pass and the copy of the
  // per-position losses to the host; the host does not wait, so it can queue backward meanwhile.
  void forward_async(BasicUnitAccess<F>& access, const std::int32_t* inputs,
                     const std::int32_t* targets);
  // The mean loss of the last forward over its targets that carry loss (CausalLM::forward; fp32
  // losses summed in double on the host, in order); waits for that forward only, not for work
  // queued after it.
  float loss() const;
  // forward_async(), then loss().
  float forward(BasicUnitAccess<F>& access, const std::int32_t* inputs,
                const std::int32_t* targets);

  // Adds d(loss_scale · mean loss)/d(params) into access.grads() (loss_scale also carries fp16's
  // loss scaling). Queues work only; does not synchronise.
  void backward(BasicUnitAccess<F>& access, float loss_scale);

  // Per-position losses [B, T] of the last forward (waits for it, as loss()).
  std::span<const float> losses() const;

  // Bytes of device memory held for activations, their gradients and scratch.
  std::size_t activation_bytes() const;

  // Per-kernel-kind timing, as the CPU model's (same rows): CUDA events around each call while
  // profiling is on; profile() waits for them and sums since set_profiling(true).
  void set_profiling(bool on);
  std::vector<ProfileEntry> profile() const;

 private:
  struct Buffers;
  struct Profiler;
  int B_;
  int T_;
  cudaStream_t stream_;
  const kernels::gpu::BlasHandle& blas_;
  std::unique_ptr<Buffers> buffers_;
  autotrain::gpu::PinnedArray<std::int32_t> host_tokens_;  // [2, B, T] inputs then targets
  autotrain::gpu::PinnedArray<float> host_losses_;         // [B, T]
  autotrain::gpu::PinnedArray<std::int32_t> host_runs_;    // make_token_runs of the inputs
  std::vector<std::uint64_t> run_scratch_;
  int token_runs_ = 0;
  autotrain::gpu::Event tokens_copied_;  // host_tokens_ may be overwritten
  autotrain::gpu::Event losses_copied_;  // host_losses_ holds the last forward's
  bool ready_for_backward_ = false;
  std::size_t loss_positions_ = 0;  // targets of the last forward that carry loss
  bool flash_ = false;  // flash attention (AUTOTRAIN_CUDA_ATTENTION=flash, where it applies)
  std::unique_ptr<Profiler> profiler_;  // null when not profiling
};

}  // namespace autotrain::model::gpu
#endif  // AUTOTRAIN_HAVE_CUDA
