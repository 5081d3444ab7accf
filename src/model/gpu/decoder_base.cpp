// The device decoders' driver (model/gpu/decoder_base.hpp).
#include "autotrain/model/gpu/decoder_base.hpp"

#include <algorithm>

#include "autotrain/core/error.hpp"
#include "autotrain/core/gpu/check.hpp"
#include "autotrain/kernels/gpu/crossentropy.hpp"
#include "autotrain/kernels/gpu/decode.hpp"
#include "autotrain/model/hook_order.hpp"
#include "host_floats.hpp"

namespace autotrain::model::gpu {

using autotrain::kernels::Transpose;

template <typename F>
DeviceDecoderBase<F>::DeviceDecoderBase(const ModelConfig& config, int positions,
                                        cudaStream_t stream, const kernels::gpu::BlasHandle& blas,
                                        DecodeLaunch launch)
    : positions_(positions),
      rows_(prefill_rows(config, positions)),
      vocab_size_(config.vocab_size),
      stream_(stream),
      blas_(blas),
      config_(config),
      host_tokens_(static_cast<std::size_t>(positions)),
      host_positions_(static_cast<std::size_t>(positions)),
      host_logits_(static_cast<std::size_t>(config.vocab_size)),
      launch_(launch) {
  AT_CHECK(positions >= 1 && positions <= config.block_size, "model: a decoder of ", positions,
           " positions; expected 1..block_size = ", config.block_size);
  for (int t = 0; t < positions; ++t) host_positions_.data()[t] = t;
}

template <typename F>
int DeviceDecoderBase<F>::prefill_rows(const ModelConfig& config, int positions) {
  constexpr int kMostRows = 64;
  constexpr std::size_t kScratchFloats = std::size_t{64} << 20 >> 2;  // 64 MiB of fp32
  const std::size_t per_row = kernels::gpu::decode_attention_scratch_floats(
      std::max(positions, 1), 1, config.n_head, config.head_size());
  const auto fitting = static_cast<int>(std::min<std::size_t>(kScratchFloats / per_row, kMostRows));
  return std::max(1, std::min(fitting, positions));
}

template <typename F>
void DeviceDecoderBase<F>::reset() {
  // The pinned tokens of queued copies are reused from position 0.
  AT_CUDA_CHECK(cudaStreamSynchronize(stream_));
  length_ = 0;
}

template <typename F>
void DeviceDecoderBase<F>::feed_token(BasicUnitAccess<F>& access, std::int32_t token,
                                      std::span<float> logits) {
  begin_tokens({&token, 1}, logits);
  const bool head = !logits.empty();
  if (launch_ == DecodeLaunch::graph) {
    graphs_[head ? 1 : 0].run(stream_, [&] { queue_step(access, head, 1); });
  } else {
    queue_step(access, head, 1);
  }
  ++length_;
  if (head) download_logits(logits);
}

template <typename F>
void DeviceDecoderBase<F>::feed_tokens(BasicUnitAccess<F>& access,
                                       std::span<const std::int32_t> tokens,
                                       std::span<float> logits) {
  AT_CHECK(!tokens.empty(), "model: feed_tokens needs at least one token");
  for (std::size_t done = 0; done < tokens.size();) {
    const auto rows = static_cast<int>(std::min<std::size_t>(rows_, tokens.size() - done));
    const bool last = done + static_cast<std::size_t>(rows) == tokens.size();
    begin_tokens(tokens.subspan(done, static_cast<std::size_t>(rows)),
                 last ? logits : std::span<float>{});
    queue_step(access, last && !logits.empty(), rows);
    length_ += rows;
    done += static_cast<std::size_t>(rows);
  }
  if (!logits.empty()) download_logits(logits);
}

template <typename F>
void DeviceDecoderBase<F>::queue_step(BasicUnitAccess<F>& access, bool with_head, int rows) {
  const DecodeBuffers& d = decode_;
  const int head = with_head ? config_.head_unit() : kNoHead;
  NoClock clock;
  const F* p = forward_in_hook_order(
      access, config_.n_layer, head, clock, [&](const F* q) { embed_rows(q, rows); },
      [&](int l, const F* q, BasicLinearAdapter<F>*) { block_rows(l, q, rows); },
      [&](const F* q) { final_norm_row(q, rows); });
  if (!with_head) return;
  // logits[1, Vp] = normed[1, C] · head[Vp, C]ᵀ
  const auto C = static_cast<std::size_t>(config_.n_embd);
  const auto Vp = static_cast<std::size_t>(config_.padded_vocab_size);
  kernels::gpu::gemm(blas_, Transpose::no, Transpose::yes, 1, Vp, C, 1.0f, d.normed, C, p + d.head,
                     C, 0.0f, d.logits, Vp, stream_);
  if (config_.final_softcap > 0) {
    kernels::gpu::logit_softcap(d.logits, 1, config_.vocab_size, config_.padded_vocab_size,
                                static_cast<float>(config_.final_softcap), stream_);
  }
  access.release(head);
}

template <typename F>
void DeviceDecoderBase<F>::begin_tokens(std::span<const std::int32_t> tokens,
                                        std::span<float> logits) {
  AT_CHECK(static_cast<std::size_t>(positions_ - length_) >= tokens.size(),
           "generation: the device cache holds ", positions_, " positions, ", length_,
           " of them fed already: no room for ", tokens.size(),
           " more; reset it and feed the last window again");
  for (const std::int32_t token : tokens) {
    AT_CHECK(token >= 0 && token < vocab_size_, "model: token ", token,
             " is not a token id in [0, vocab_size = ", vocab_size_, ")");
  }
  AT_CHECK(logits.empty() || logits.size() == static_cast<std::size_t>(vocab_size_),
           "model: the logits hold vocab_size = ", vocab_size_, " values, not ", logits.size());
  const int t = length_;
  std::copy(tokens.begin(), tokens.end(), host_tokens_.data() + t);
  AT_CUDA_CHECK(cudaMemcpyAsync(decode_.tokens + t, host_tokens_.data() + t,
                                tokens.size() * sizeof(std::int32_t), cudaMemcpyHostToDevice,
                                stream_));
  AT_CUDA_CHECK(cudaMemcpyAsync(decode_.position, host_positions_.data() + t, sizeof(std::int32_t),
                                cudaMemcpyHostToDevice, stream_));
}

template <typename F>
void DeviceDecoderBase<F>::download_logits(std::span<float> logits) {
  AT_CUDA_CHECK(cudaMemcpyAsync(host_logits_.data(), decode_.logits, logits.size() * sizeof(F),
                                cudaMemcpyDeviceToHost, stream_));
  AT_CUDA_CHECK(cudaStreamSynchronize(stream_));
  to_host_floats(host_logits_.data(), logits);
}

template class DeviceDecoderBase<float>;
template class DeviceDecoderBase<__nv_bfloat16>;
template class DeviceDecoderBase<__half>;

}  // namespace autotrain::model::gpu
