#pragma once
// The device decoders' driver (model/gpu/decoder.hpp, llama_decoder.hpp are its families):
// feed_token and feed_tokens written once, in the unit hook order of inference (0, the blocks,
// L + 1, the head's unit when it is 0): the checks, the tokens' and their first position's copies
// to the device (each position has its own pinned slots, so no queued copy reads a slot written
// after it), the head and the logits' copy back. A family supplies its buffers (DecodeBuffers) and
// the forward of a step's rows (one while generating, up to rows_ of a prompt): its embedding, a
// block (reading and extending its cache) and the final norm of the last row. The family's
// kernels read the rows' first position from DecodeBuffers::position (kernels/gpu/decode.hpp), so
// a one-row step queues the same launches at every position: with DecodeLaunch::graph that step
// (one with the head, one without) is captured into a CUDA graph once and replayed
// (core/gpu/graph.hpp).
#ifdef AUTOTRAIN_HAVE_CUDA
#include <cstddef>
#include <cstdint>
#include <span>

#include "autotrain/core/gpu/device.hpp"
#include "autotrain/core/gpu/graph.hpp"
#include "autotrain/kernels/gpu/matmul.hpp"
#include "autotrain/model/config.hpp"
#include "autotrain/model/gpu/causal_lm.hpp"

namespace autotrain::model::gpu {

template <typename F>
class DeviceDecoderBase : public DeviceDecoder<F> {
 public:
  void reset() override;
  int length() const override { return length_; }
  void feed_token(BasicUnitAccess<F>& access, std::int32_t token, std::span<float> logits) final;
  void feed_tokens(BasicUnitAccess<F>& access, std::span<const std::int32_t> tokens,
                   std::span<float> logits) final;
  std::size_t device_bytes() const final { return decode_.bytes; }

 protected:
  // A cache of `positions` (1..config.block_size) positions; rows_ = prefill_rows(config,
  // positions).
  DeviceDecoderBase(const ModelConfig& config, int positions, cudaStream_t stream,
                    const kernels::gpu::BlasHandle& blas, DecodeLaunch launch);

  // What the driver reads and writes of its family's buffers (the family's constructor sets it).
  struct DecodeBuffers {
    std::int32_t* tokens;    // [positions] the tokens fed
    std::int32_t* position;  // [1] the position of the token being fed
    F* normed;               // [C] the final norm's output: the head's input
    F* logits;               // [Vp]
    std::size_t head;        // the head's offset in its unit
    std::size_t bytes;       // the family's device memory, the cache included
  };
  // The family's forward of rows t..t + rows - 1 (t = *position, their tokens at tokens[t...]),
  // each part from its unit's params: the embedding into the stream [rows, C], block l (its cache
  // rows t.. written, each row's attention over the rows up to its own), the final norm of the
  // stream's last row into DecodeBuffers::normed. Every launch reads t from the device.
  virtual void embed_rows(const F* p, int rows) = 0;
  virtual void block_rows(int l, const F* p, int rows) = 0;
  virtual void final_norm_row(const F* p, int rows) = 0;

  // The most rows a step feeds, for a cache of `positions`: 64, fewer where decode_attention's
  // scratch for them would pass 64 MiB.
  static int prefill_rows(const ModelConfig& config, int positions);

  int positions_;
  int rows_;
  int length_ = 0;
  int vocab_size_;
  cudaStream_t stream_;
  const kernels::gpu::BlasHandle& blas_;
  ModelConfig config_;
  DecodeBuffers decode_{};

 private:
  // Checks that the cache has room, the tokens are ids and `logits` is empty or vocab_size
  // long; queues the copies of the tokens to decode_.tokens[t...] and of t to decode_.position.
  void begin_tokens(std::span<const std::int32_t> tokens, std::span<float> logits);
  // Queues the forward of a step of `rows` rows (and with `head` the head of the last into
  // decode_.logits).
  void queue_step(BasicUnitAccess<F>& access, bool head, int rows);
  // Copies the first logits.size() of decode_.logits into `logits` as fp32, waiting for them.
  void download_logits(std::span<float> logits);

  autotrain::gpu::PinnedArray<std::int32_t> host_tokens_;     // [positions] the tokens fed
  autotrain::gpu::PinnedArray<std::int32_t> host_positions_;  // [positions] 0, 1, ...
  autotrain::gpu::PinnedArray<F> host_logits_;                // [vocab_size]
  DecodeLaunch launch_;
  autotrain::gpu::StreamGraph graphs_[2];  // the step without the head, and with it
};

}  // namespace autotrain::model::gpu
#endif  // AUTOTRAIN_HAVE_CUDA
