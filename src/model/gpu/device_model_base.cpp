// The device models' driver (model/gpu/device_model_base.hpp).
#include "autotrain/model/gpu/device_model_base.hpp"

#include <algorithm>

#include "../check_tokens.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/gpu/check.hpp"
#include "autotrain/core/log.hpp"
#include "autotrain/kernels/gpu/attention.hpp"
#include "autotrain/kernels/gpu/crossentropy.hpp"
#include "autotrain/kernels/gpu/cudnn_attention.hpp"
#include "autotrain/kernels/gpu/matmul.hpp"
#include "autotrain/kernels/gpu/score.hpp"
#include "autotrain/model/hook_order.hpp"
#include "event_clock.hpp"

namespace autotrain::model::gpu {

using autotrain::kernels::Transpose;

template <typename F>
DeviceModelBase<F>::DeviceModelBase(const ModelConfig& config, int B, int T, cudaStream_t stream,
                                    const kernels::gpu::BlasHandle& blas, Recompute recompute,
                                    const char* positions_key)
    : B_(B),
      T_(T),
      recompute_(recompute),
      stream_(stream),
      blas_(blas),
      tokens_(static_cast<std::size_t>(B) * static_cast<std::size_t>(T)),
      host_losses_(static_cast<std::size_t>(B) * static_cast<std::size_t>(T)),
      host_weights_(host_losses_.size()),
      config_(config) {
  AT_CHECK(B >= 1, "model: batch_size must be >= 1, got ", B);
  AT_CHECK(T >= 1 && T <= config.block_size, "model: sequence length ", T, " must be in [1, ",
           positions_key, " = ", config.block_size, "]");
  const std::size_t bt = host_losses_.size();
  const auto outputs = static_cast<std::size_t>(config.head_outputs());
  memory_ = autotrain::gpu::DeviceBuffer(
      carve(driver_, autotrain::gpu::SubBuffers(nullptr), bt, outputs));
  carve(driver_, autotrain::gpu::SubBuffers(memory_.data()), bt, outputs);
}

template <typename F>
std::size_t DeviceModelBase<F>::carve(DriverBuffers& driver, autotrain::gpu::SubBuffers parts,
                                      std::size_t bt, std::size_t outputs) {
  parts.take(driver.logits, bt * outputs);
  parts.take(driver.lse, bt);
  parts.take(driver.losses, bt);
  parts.take(driver.weights, bt);
  parts.take(driver.inputs, bt);
  parts.take(driver.targets, bt);
  parts.take(driver.token_runs, 3 * bt + 1);
  return parts.bytes();
}

template <typename F>
std::size_t DeviceModelBase<F>::driver_bytes(const ModelConfig& config, int B, int T) {
  DriverBuffers sized{};
  return carve(sized, autotrain::gpu::SubBuffers(nullptr),
               static_cast<std::size_t>(B) * static_cast<std::size_t>(T),
               static_cast<std::size_t>(config.head_outputs()));
}

template <typename F>
bool DeviceModelBase<F>::plans_fused_attention(bool flash_applies) {
  const kernels::AttentionChoice choice = kernels::choose_attention(
      kernels::gpu::attention_kind(), flash_applies, "not built when planning");
  return choice.path != kernels::AttentionPath::unfused;
}

template <typename F>
DeviceModelBase<F>::~DeviceModelBase() = default;

namespace {

// The log line's words for a path.
std::string attention_name(kernels::AttentionPath path) {
  switch (path) {
    case kernels::AttentionPath::cudnn:
      return "cuDNN fused (sdpa)";
    case kernels::AttentionPath::flash:
      return "own flash kernels";
    case kernels::AttentionPath::unfused:
      break;
  }
  return kernels::gpu::attention_uses_reference() ? "reference kernels" : "cuBLAS fast path";
}

// "" where cuDNN's plans build for every shape (building them now), else the first refusal.
std::string cudnn_refusal(const std::vector<kernels::SdpaShape>& shapes, cudaStream_t stream) {
  if (shapes.empty()) return "fp32 (cuDNN's fused attention takes bf16 or fp16)";
  for (const kernels::SdpaShape& shape : shapes) {
    const std::string refusal = kernels::gpu::cudnn_attention_prepare(shape, stream);
    if (!refusal.empty()) return cat(shape.describe(), ": ", refusal);
  }
  return "";
}

}  // namespace

template <typename F>
void DeviceModelBase<F>::choose_attention(bool flash_applies,
                                          const std::vector<kernels::SdpaShape>& shapes) {
  const kernels::AttentionKind kind = kernels::gpu::attention_kind();
  const std::string refusal = kernels::attention_tries_cudnn(kind)
                                  ? cudnn_refusal(shapes, stream_)
                                  : "not asked for (AUTOTRAIN_CUDA_ATTENTION)";
  const kernels::AttentionChoice choice = kernels::choose_attention(kind, flash_applies, refusal);
  attention_ = choice.path;
  if (attention_ == kernels::AttentionPath::cudnn) {
    std::string shapes_text;
    for (const kernels::SdpaShape& shape : shapes) {
      shapes_text += cat(shapes_text.empty() ? "" : "; ", shape.describe(), " [",
                         kernels::gpu::cudnn_attention_engines(shape), "]");
    }
    log::info("attention: ", attention_name(attention_), " ", shapes_text, ", ",
              kernels::gpu::cudnn_attention_version());
    return;
  }
  const bool asked_in_vain =
      (kind == kernels::AttentionKind::cudnn) ||
      (kind == kernels::AttentionKind::flash && attention_ != kernels::AttentionPath::flash);
  const std::string line = cat("attention: ", attention_name(attention_), " (", choice.why, ")");
  if (asked_in_vain) {
    log::warn(line);
  } else {
    log::info(line);
  }
}

template <typename F>
void DeviceModelBase<F>::forward_async(BasicUnitAccess<F>& access, const std::int32_t* inputs,
                                       const std::int32_t* targets) {
  const DriverBuffers& d = driver_;
  loss_positions_ = tokens_.upload(inputs, targets, config_.vocab_size, d.inputs, d.targets,
                                   d.token_runs, stream_);
  ready_for_backward_ = false;

  EventClock clock(profiler_.get(), stream_, Pass::forward);
  const F* p = forward_in_hook_order(
      access, config_.n_layer, config_.head_unit(), clock, [&](const F* q) { embed_forward(q); },
      [&](int l, const F* q, BasicLinearAdapter<F>* adapter) {
        block_forward(l, q, adapter, clock);
      },
      [&](const F* q) { final_norm_forward(q); });
  head_forward(p, clock);
  access.release(config_.head_unit());
  loss_forward(clock);
}

template <typename F>
void DeviceModelBase<F>::backward(BasicUnitAccess<F>& access, float loss_scale) {
  AT_CHECK(!config_.score_head, kScoreBackward);
  // d(mean loss · scale)/d(loss of one position)
  backward_rows(access, position_dloss(loss_scale, loss_positions_), nullptr);
}

template <typename F>
void DeviceModelBase<F>::backward_weighted(BasicUnitAccess<F>& access, float loss_scale,
                                           std::span<const float> weights) {
  AT_CHECK(weights.size() == host_weights_.size(), "model: backward_weighted() needs ",
           host_weights_.size(), " position weights (B·T), got ", weights.size());
  weights_copied_.synchronize();  // the last call's copy has left host_weights_
  std::copy(weights.begin(), weights.end(), host_weights_.data());
  AT_CUDA_CHECK(cudaMemcpyAsync(driver_.weights, host_weights_.data(),
                                weights.size() * sizeof(float), cudaMemcpyHostToDevice, stream_));
  weights_copied_.record(stream_);
  backward_rows(access, loss_scale, driver_.weights);
}

template <typename F>
void DeviceModelBase<F>::backward_rows(BasicUnitAccess<F>& access, float dloss,
                                       const float* row_scale) {
  AT_CHECK(ready_for_backward_, "model: backward() needs a forward() with targets before it");
  ready_for_backward_ = false;  // the logits buffer becomes dlogits
  const DriverBuffers& d = driver_;
  EventClock clock(profiler_.get(), stream_, Pass::backward);
  if (config_.score_head) {
    kernels::gpu::score_backward(d.logits, d.targets, dloss, row_scale, host_losses_.size(),
                                 stream_);
  } else {
    kernels::gpu::crossentropy_backward(
        d.logits, d.logits, d.lse, d.targets, dloss, host_losses_.size(), config_.vocab_size,
        config_.padded_vocab_size, stream_, static_cast<float>(config_.final_softcap), row_scale);
  }
  clock.lap(kCrossEntropy);
  backward_in_hook_order(
      access, config_.n_layer, config_.head_unit(), recompute_ != Recompute::none, clock,
      [&](const F* p, F* g) { head_backward(p, g, clock); },
      [&](const F* p, F* g) { final_norm_backward(p, g); },
      [&](int l, const F* p, BasicLinearAdapter<F>* adapter) {
        if (recompute_ == Recompute::full) {
          block_forward(l, p, adapter, clock);
        } else {
          block_recompute(l, p, clock);
        }
      },
      [&](int l, const F* p, F* g, BasicLinearAdapter<F>* adapter) {
        block_backward(l, p, g, adapter, clock);
      },
      [&](F* g) { embed_backward(g, tokens_.runs(d.token_runs)); });
}

template <typename F>
void DeviceModelBase<F>::head_forward(const F* p, EventClock& clock) {
  const DriverBuffers& d = driver_;
  const std::size_t bt = host_losses_.size(), C = static_cast<std::size_t>(config_.n_embd);
  const auto N = static_cast<std::size_t>(config_.head_outputs());
  clock.restart();
  // logits[BT, N] = normed[BT, C] · head[N, C]ᵀ (N = Vp, or the score head's 1)
  kernels::gpu::gemm(blas_, Transpose::no, Transpose::yes, bt, N, C, 1.0f, family_.normed, C,
                     p + family_.head, C, 0.0f, d.logits, N, stream_);
  if (config_.final_softcap > 0 && !config_.score_head) {
    kernels::gpu::logit_softcap(d.logits, bt, config_.vocab_size, config_.padded_vocab_size,
                                static_cast<float>(config_.final_softcap), stream_);
  }
  clock.lap(kLmHead);
}

template <typename F>
void DeviceModelBase<F>::head_backward(const F* p, F* g, EventClock& clock) {
  const DriverBuffers& d = driver_;
  const std::size_t bt = host_losses_.size(), C = static_cast<std::size_t>(config_.n_embd);
  const auto N = static_cast<std::size_t>(config_.head_outputs());
  clock.restart();
  // dhead[N, C] += dlogits[BT, N]ᵀ · normed[BT, C];  dnormed[BT, C] = dlogits · head[N, C]
  if (g != nullptr) {
    kernels::gpu::gemm(blas_, Transpose::yes, Transpose::no, N, C, bt, 1.0f, d.logits, N,
                       family_.normed, C, 1.0f, g + family_.head, C, stream_);
  }
  kernels::gpu::gemm(blas_, Transpose::no, Transpose::no, bt, C, N, 1.0f, d.logits, N,
                     p + family_.head, C, 0.0f, family_.dnormed, C, stream_);
  clock.lap(kLmHead);
}

template <typename F>
void DeviceModelBase<F>::loss_forward(EventClock& clock) {
  const DriverBuffers& d = driver_;
  const std::size_t bt = host_losses_.size();
  clock.restart();
  if (config_.score_head) {
    kernels::gpu::score_forward(d.losses, d.logits, d.targets, bt, stream_);
  } else {
    kernels::gpu::crossentropy_forward(d.losses, d.lse, d.logits, d.targets, bt, config_.vocab_size,
                                       config_.padded_vocab_size, stream_);
  }
  clock.lap(kCrossEntropy);
  AT_CUDA_CHECK(cudaMemcpyAsync(host_losses_.data(), d.losses, bt * sizeof(float),
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
