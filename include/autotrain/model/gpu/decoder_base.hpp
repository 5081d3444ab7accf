#pragma once
// What every device decoder (model/gpu/decoder.hpp, llama_decoder.hpp) shares around its
// family's forward of one row: the cache's length and positions, the checks of feed_token, the
// token's copy to the device (each position has its own pinned slot, so no queued copy reads a
// slot written after it) and the logits' copy back. A decoder's feed_token is
//   const int t = begin_token(token, logits, device_tokens);   // checks, queues the token
//   ... the family's layers for row t ...
//   ++length_; if (!logits.empty()) { ... the head into device_logits ...;
//                                      download_logits(device_logits, logits); }
#ifdef AUTOTRAIN_HAVE_CUDA
#include <cstdint>
#include <span>

#include "autotrain/core/gpu/device.hpp"
#include "autotrain/kernels/gpu/matmul.hpp"
#include "autotrain/model/config.hpp"
#include "autotrain/model/gpu/causal_lm.hpp"

namespace autotrain::model::gpu {

template <typename F>
class DeviceDecoderBase : public DeviceDecoder<F> {
 public:
  void reset() override;
  int length() const override { return length_; }

 protected:
  // A cache of `positions` (1..config.block_size) positions.
  DeviceDecoderBase(const ModelConfig& config, int positions, cudaStream_t stream,
                    const kernels::gpu::BlasHandle& blas);

  // Checks that the cache has room, the token is an id and `logits` is empty or vocab_size
  // long; queues the token's copy to device_tokens[t]. Returns t, the token's position.
  int begin_token(std::int32_t token, std::span<float> logits, std::int32_t* device_tokens);
  // Copies the first logits.size() of device_logits into `logits` as fp32, waiting for them.
  void download_logits(const F* device_logits, std::span<float> logits);

  int positions_;
  int length_ = 0;
  int vocab_size_;
  cudaStream_t stream_;
  const kernels::gpu::BlasHandle& blas_;
  autotrain::gpu::PinnedArray<std::int32_t> host_tokens_;  // [positions] the tokens fed
  autotrain::gpu::PinnedArray<F> host_logits_;             // [vocab_size]
};

}  // namespace autotrain::model::gpu
#endif  // AUTOTRAIN_HAVE_CUDA
