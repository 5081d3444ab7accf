#pragma once
// Llama-family inference one token at a time on one CUDA device, with a key/value cache: the
// device counterpart of BasicLlama::reset_cache() / feed_token() (model/llama.hpp), which
// `generate` runs. Each layer's attention input rows (q|k|v, normed and rotated; only the NKV
// key/value heads of grouped-query attention) of the positions fed so far stay on the device
// ([L, positions, (NH + 2·NKV)·D]); a new token runs the forward for its own row only (a prompt's
// tokens several rows a step, feed_tokens), its attention reading the cached rows
// (kernels::gpu::decode_attention). Same units, hooks and tensor offsets as DeviceLlama. All
// device memory (the cache, a step's rows of every activation, the rotary tables for
// `positions`) is allocated at construction; feeding allocates nothing.
// The interface is gpu/causal_lm.hpp's DeviceDecoder.
#ifdef AUTOTRAIN_HAVE_CUDA
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "autotrain/core/gpu/device.hpp"
#include "autotrain/kernels/gpu/matmul.hpp"
#include "autotrain/model/gpu/decoder_base.hpp"
#include "autotrain/model/param_layout.hpp"

namespace autotrain::model::gpu {

template <typename F>
class DeviceLlamaDecoder final : public DeviceDecoderBase<F> {
 public:
  // A cache of `positions` (1..max_position_embeddings) positions on the current device; work is
  // queued on `stream`.
  DeviceLlamaDecoder(const ParamLayout& layout, int positions, cudaStream_t stream,
                     const kernels::gpu::BlasHandle& blas,
                     DecodeLaunch launch = DecodeLaunch::kernels);
  ~DeviceLlamaDecoder() override;
  DeviceLlamaDecoder(const DeviceLlamaDecoder&) = delete;
  DeviceLlamaDecoder& operator=(const DeviceLlamaDecoder&) = delete;

 private:
  struct Buffers;
  // The driver's parts (gpu/decoder_base.hpp).
  void embed_rows(const F* p, int rows) override;
  void block_rows(int l, const F* p, int rows) override;
  void final_norm_row(const F* p, int rows) override;
  using DeviceDecoderBase<F>::stream_;
  using DeviceDecoderBase<F>::blas_;
  std::unique_ptr<Buffers> buffers_;
};

}  // namespace autotrain::model::gpu
#endif  // AUTOTRAIN_HAVE_CUDA
