#pragma once
// What every device model (model/gpu/gpt2.hpp, llama.hpp) shares around its family's forward and
// backward: the micro-batch shape and its checks, the stream and cuBLAS handle, the tokens on
// their way to the device, the per-position losses copied back to pinned memory and their mean,
// the choice of attention path, and the per-kernel profile.
#ifdef AUTOTRAIN_HAVE_CUDA
#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "autotrain/core/gpu/device.hpp"
#include "autotrain/kernels/gpu/matmul.hpp"
#include "autotrain/model/config.hpp"
#include "autotrain/model/gpu/causal_lm.hpp"
#include "autotrain/model/gpu/token_upload.hpp"
#include "autotrain/model/profile.hpp"

namespace autotrain::model::gpu {

class EventProfiler;  // src/model/gpu/event_clock.hpp

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

 protected:
  // Checks B >= 1 and 1 <= T <= block_size (`positions_key`: config.json's name for it).
  DeviceModelBase(const ModelConfig& config, int B, int T, cudaStream_t stream,
                  const kernels::gpu::BlasHandle& blas, bool recompute, const char* positions_key);
  // flash_: flash attention where it applies (`supported`) unless the fast path was asked for;
  // a line says so where flash was asked for and does not apply.
  void choose_attention(bool supported, int head_size);
  // The forward's end, from the logits [B, T, Vp]: the cross-entropy of every position (timed as
  // the profile's crossentropy row) into losses and lse [B, T], the losses copied to the host as
  // they complete; backward may follow.
  void loss_forward(float* losses, float* lse, const F* logits, const std::int32_t* targets);

  int B_;
  int T_;
  bool recompute_;
  cudaStream_t stream_;
  const kernels::gpu::BlasHandle& blas_;
  TokenUpload tokens_;  // inputs, targets and token runs on their way to the device
  autotrain::gpu::PinnedArray<float> host_losses_;  // [B, T]
  autotrain::gpu::Event losses_copied_;             // host_losses_ holds the last forward's
  bool ready_for_backward_ = false;
  std::size_t loss_positions_ = 0;  // targets of the last forward that carry loss
  bool flash_ = false;
  std::unique_ptr<EventProfiler> profiler_;  // null when not profiling

 private:
  ModelConfig config_;  // names the profile's rows
};

}  // namespace autotrain::model::gpu
#endif  // AUTOTRAIN_HAVE_CUDA
