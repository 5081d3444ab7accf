// GPT-2 decoding with a key/value cache on one CUDA device (model/gpu/decoder.hpp): the CPU
// model's feed_token (src/model/gpt2.cpp) step for step, on one row, with the kernels of
// kernels/gpu/ queued on one stream. Host code only (a .cpp: the header needs C++20).
#include "autotrain/model/gpu/decoder.hpp"

#include "autotrain/core/error.hpp"
#include "autotrain/core/gpu/check.hpp"
#include "autotrain/kernels/gpu/decode.hpp"
#include "autotrain/kernels/gpu/layernorm.hpp"
#include "autotrain/kernels/gpu/residual.hpp"
#include "autotrain/model/gpt2_offsets.hpp"

namespace autotrain::model::gpu {

using namespace autotrain::kernels::gpu;
using autotrain::kernels::Transpose;

// The cache and one row of each activation, carved from one allocation.
template <typename F>
struct DeviceGpt2Decoder<F>::Buffers : TensorOffsets {
  ModelConfig config;
  autotrain::gpu::DeviceBuffer memory;
  F* cache;                             // [L, positions, 3C] each layer's qkv rows
  F *x, *ln, *atty, *proj, *residual2;  // [C]
  F* qkv;                               // [3C] the new row's, before the cache takes it
  F *fch, *fch_gelu;                    // [4C]
  float* scores;                        // decode_attention's scratch
  F* logits;                            // [Vp]
  float *mean, *rstd;                   // [1] LayerNorm statistics (not read)
  std::int32_t* tokens;                 // [positions] the tokens fed
  std::int32_t* position;               // [1] the new row's position

  Buffers(const ParamLayout& layout, int positions)
      : TensorOffsets(layout), config(layout.config()) {
    const auto P = static_cast<std::size_t>(positions);
    const auto L = static_cast<std::size_t>(config.n_layer);
    const auto C = static_cast<std::size_t>(config.n_embd);
    const auto NH = static_cast<std::size_t>(config.n_head);
    const auto Vp = static_cast<std::size_t>(config.padded_vocab_size);
    auto carve = [&](autotrain::gpu::SubBuffers parts) {
      parts.take(cache, L * P * 3 * C);
      for (F** row : {&x, &ln, &atty, &proj, &residual2}) parts.take(*row, C);
      parts.take(qkv, 3 * C);
      parts.take(fch, 4 * C);
      parts.take(fch_gelu, 4 * C);
      parts.take(scores, decode_attention_scratch_floats(positions, static_cast<int>(NH),
                                                         static_cast<int>(C / NH)));
      parts.take(logits, Vp);
      parts.take(mean, 1);
      parts.take(rstd, 1);
      parts.take(tokens, P);
      parts.take(position, 1);
      return parts.bytes();
    };
    memory = autotrain::gpu::DeviceBuffer(carve(autotrain::gpu::SubBuffers(nullptr)));
    carve(autotrain::gpu::SubBuffers(memory.data()));
  }
};

template <typename F>
DeviceGpt2Decoder<F>::DeviceGpt2Decoder(const ParamLayout& layout, int positions,
                                        cudaStream_t stream, const BlasHandle& blas,
                                        DecodeLaunch launch)
    : DeviceDecoderBase<F>(layout.config(), positions, stream, blas, launch) {
  const ModelConfig& config = layout.config();
  AT_CHECK(config.n_embd <= kLayerNormMaxChannels, "model: n_embd = ", config.n_embd,
           " is wider than the ", kLayerNormMaxChannels, " channels the CUDA LayerNorm takes");
  buffers_ = std::make_unique<Buffers>(layout, positions);
  const Buffers& k = *buffers_;
  this->decode_ = {k.tokens, k.position, k.ln, k.logits, k.wte, k.memory.bytes()};
}

template <typename F>
DeviceGpt2Decoder<F>::~DeviceGpt2Decoder() = default;

template <typename F>
void DeviceGpt2Decoder<F>::embed_row(const F* p) {
  const Buffers& k = *buffers_;
  decode_embed(k.x, k.tokens, k.position, p + k.wte, p + k.wpe, k.config.n_embd, 1.0f, stream_);
}

template <typename F>
void DeviceGpt2Decoder<F>::block_row(int l, const F* p) {
  const Buffers& k = *buffers_;
  const int C = k.config.n_embd, NH = k.config.n_head;
  const auto uC = static_cast<std::size_t>(C);
  const auto P = static_cast<std::size_t>(this->positions_);
  // This layer's qkv rows of positions 0..t; row t is computed now.
  F* rows = k.cache + static_cast<std::size_t>(l) * P * 3 * uC;
  layernorm_forward(k.ln, k.mean, k.rstd, k.x, p + k.ln1w, p + k.ln1b, 1, C, stream_);
  matmul_forward(blas_, k.qkv, k.ln, p + k.qkvw, p + k.qkvb, 1, C, 3 * C, stream_);
  decode_store_row(rows, k.qkv, 3 * uC, k.position, stream_);
  decode_attention(k.atty, k.scores, rows, k.position, this->positions_, NH, NH, C / NH, {},
                   stream_);
  matmul_forward(blas_, k.proj, k.atty, p + k.attprojw, p + k.attprojb, 1, C, C, stream_);
  residual_forward(k.residual2, k.x, k.proj, uC, stream_);
  layernorm_forward(k.ln, k.mean, k.rstd, k.residual2, p + k.ln2w, p + k.ln2b, 1, C, stream_);
  matmul_gelu_forward(blas_, k.fch_gelu, k.fch, k.ln, p + k.fcw, p + k.fcb, 1, C, 4 * C, stream_);
  matmul_forward(blas_, k.proj, k.fch_gelu, p + k.fcprojw, p + k.fcprojb, 1, 4 * C, C, stream_);
  residual_forward(k.x, k.residual2, k.proj, uC, stream_);
}

template <typename F>
void DeviceGpt2Decoder<F>::final_norm_row(const F* p) {
  const Buffers& k = *buffers_;
  layernorm_forward(k.ln, k.mean, k.rstd, k.x, p + k.lnfw, p + k.lnfb, 1, k.config.n_embd, stream_);
}

template class DeviceGpt2Decoder<float>;
template class DeviceGpt2Decoder<__nv_bfloat16>;
template class DeviceGpt2Decoder<__half>;

}  // namespace autotrain::model::gpu
