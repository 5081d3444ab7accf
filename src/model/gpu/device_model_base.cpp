// What the device models share (model/gpu/device_model_base.hpp).
#include "autotrain/model/gpu/device_model_base.hpp"

#include "../check_tokens.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/gpu/check.hpp"
#include "autotrain/core/log.hpp"
#include "autotrain/kernels/gpu/attention.hpp"
#include "autotrain/kernels/gpu/crossentropy.hpp"
#include "event_clock.hpp"

namespace autotrain::model::gpu {

template <typename F>
DeviceModelBase<F>::DeviceModelBase(const ModelConfig& config, int B, int T, cudaStream_t stream,
                                    const kernels::gpu::BlasHandle& blas, bool recompute,
                                    const char* positions_key)
    : B_(B),
      T_(T),
      recompute_(recompute),
      stream_(stream),
      blas_(blas),
      tokens_(static_cast<std::size_t>(B) * static_cast<std::size_t>(T)),
      host_losses_(static_cast<std::size_t>(B) * static_cast<std::size_t>(T)),
      config_(config) {
  AT_CHECK(B >= 1, "model: batch_size must be >= 1, got ", B);
  AT_CHECK(T >= 1 && T <= config.block_size, "model: sequence length ", T, " must be in [1, ",
           positions_key, " = ", config.block_size, "]");
}

template <typename F>
DeviceModelBase<F>::~DeviceModelBase() = default;

template <typename F>
void DeviceModelBase<F>::choose_attention(bool supported, int head_size) {
  using kernels::gpu::AttentionKind;
  flash_ = kernels::gpu::attention_takes_flash(supported);
  if (kernels::gpu::attention_kind() == AttentionKind::flash && !flash_) {
    log::warn(
        "attention: flash attention needs bf16/fp16 and a head size of 16, 32, 48, 64 or 128 "
        "(here ",
        sizeof(F) == 4 ? "fp32" : "16-bit", ", head size ", head_size, "); using the fast path");
  }
}

template <typename F>
void DeviceModelBase<F>::loss_forward(float* losses, float* lse, const F* logits,
                                      const std::int32_t* targets) {
  const std::size_t bt = host_losses_.size();
  EventClock clock(profiler_.get(), stream_, Pass::forward);
  clock.restart();
  kernels::gpu::crossentropy_forward(losses, lse, logits, targets, bt, config_.vocab_size,
                                     config_.padded_vocab_size, stream_);
  clock.lap(kCrossEntropy);
  AT_CUDA_CHECK(cudaMemcpyAsync(host_losses_.data(), losses, bt * sizeof(float),
                                cudaMemcpyDeviceToHost, stream_));
  losses_copied_.record(stream_);
  ready_for_backward_ = true;
}

template <typename F>
float DeviceModelBase<F>::loss() const {
  losses_copied_.synchronize();
  // In order, in double: as the CPU model sums its losses.
  return static_cast<float>(mean_loss(host_losses_.data(), host_losses_.size(), loss_positions_));
}

template <typename F>
std::span<const float> DeviceModelBase<F>::losses() const {
  losses_copied_.synchronize();
  return {host_losses_.data(), host_losses_.size()};
}

template <typename F>
void DeviceModelBase<F>::set_profiling(bool on) {
  if (on) {
    profiler_ = std::make_unique<EventProfiler>();
  } else {
    profiler_.reset();
  }
}

template <typename F>
std::vector<ProfileEntry> DeviceModelBase<F>::profile() const {
  return profiler_ ? profiler_->rows(config_) : EventProfiler::zero_rows(config_);
}

template class DeviceModelBase<float>;
template class DeviceModelBase<__nv_bfloat16>;
template class DeviceModelBase<__half>;

}  // namespace autotrain::model::gpu
