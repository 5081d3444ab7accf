// GPT-2 decoding with a key/value cache on one CUDA device (model/gpu/decoder.hpp): the CPU
// model's feed_token (src/model/gpt2.cpp) step for step, on a step's rows (one while generating),
// with the kernels of kernels/gpu/ queued on one stream. Host code only (a .cpp: the header needs
// C++20).
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

// The cache and a step's rows (R of them at most) of each activation, carved from one allocation.
template <typename F>
struct DeviceGpt2Decoder<F>::Buffers : TensorOffsets {
  ModelConfig config;
  autotrain::gpu::DeviceBuffer memory;
  F* cache;                             // [L, positions, 3C] each layer's qkv rows
  F *x, *ln, *atty, *proj, *residual2;  // [R, C]
  F* qkv;                               // [R, 3C] the new rows', before the cache takes them
  F *fch, *fch_gelu;                    // [R, 4C]
  float* scores;                        // decode_attention's scratch
  F* logits;                            // [Vp]
  float *mean, *rstd;                   // [R] LayerNorm statistics (not read)
  std::int32_t* tokens;                 // [positions] the tokens fed
  std::int32_t* position;               // [1] the first new row's position

  Buffers(const ParamLayout& layout, int positions, int most_rows)
      : TensorOffsets(layout), config(layout.config()) {
    const auto P = static_cast<std::size_t>(positions);
    const auto R = static_cast<std::size_t>(most_rows);
    const auto L = static_cast<std::size_t>(config.n_layer);
    const auto C = static_cast<std::size_t>(config.n_embd);
    const auto NH = static_cast<std::size_t>(config.n_head);
    const auto Vp = static_cast<std::size_t>(config.padded_vocab_size);
    auto carve = [&](autotrain::gpu::SubBuffers parts) {
      parts.take(cache, L * P * 3 * C);
      for (F** rows : {&x, &ln, &atty, &proj, &residual2}) parts.take(*rows, R * C);
      parts.take(qkv, R * 3 * C);
      parts.take(fch, R * 4 * C);
      parts.take(fch_gelu, R * 4 * C);
      parts.take(scores, decode_attention_scratch_floats(positions, most_rows, static_cast<int>(NH),
                                                         static_cast<int>(C / NH)));
      parts.take(logits, Vp);
      parts.take(mean, R);
      parts.take(rstd, R);
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
  buffers_ = std::make_unique<Buffers>(layout, positions, this->rows_);
  const Buffers& k = *buffers_;
  this->decode_ = {k.tokens, k.position, k.ln, k.logits, k.wte, k.memory.bytes()};
}

template <typename F>
DeviceGpt2Decoder<F>::~DeviceGpt2Decoder() = default;

template <typename F>
void DeviceGpt2Decoder<F>::embed_rows(const F* p, int rows) {
  const Buffers& k = *buffers_;
  decode_embed(k.x, k.tokens, k.position, rows, p + k.wte, p + k.wpe, k.config.n_embd, 1.0f,
               stream_);
}

template <typename F>
void DeviceGpt2Decoder<F>::block_rows(int l, const F* p, int rows) {
  const Buffers& k = *buffers_;
  const int C = k.config.n_embd, NH = k.config.n_head;
  const auto uC = static_cast<std::size_t>(C);
  const auto P = static_cast<std::size_t>(this->positions_);
  const std::size_t values = static_cast<std::size_t>(rows) * uC;
  // This layer's qkv rows of positions 0..t + rows - 1; rows t.. are computed now.
  F* cache = k.cache + static_cast<std::size_t>(l) * P * 3 * uC;
  layernorm_forward(k.ln, k.mean, k.rstd, k.x, p + k.ln1w, p + k.ln1b, rows, C, stream_);
  matmul_forward(blas_, k.qkv, k.ln, p + k.qkvw, p + k.qkvb, rows, C, 3 * C, stream_);
  decode_store_rows(cache, k.qkv, rows, 3 * uC, k.position, stream_);
  decode_attention(k.atty, k.scores, cache, k.position, rows, this->positions_, NH, NH, C / NH, {},
                   stream_);
  matmul_forward(blas_, k.proj, k.atty, p + k.attprojw, p + k.attprojb, rows, C, C, stream_);
  residual_forward(k.residual2, k.x, k.proj, values, stream_);
  layernorm_forward(k.ln, k.mean, k.rstd, k.residual2, p + k.ln2w, p + k.ln2b, rows, C, stream_);
  matmul_gelu_forward(blas_, k.fch_gelu, k.fch, k.ln, p + k.fcw, p + k.fcb, rows, C, 4 * C,
                      stream_);
  matmul_forward(blas_, k.proj, k.fch_gelu, p + k.fcprojw, p + k.fcprojb, rows, 4 * C, C, stream_);
  residual_forward(k.x, k.residual2, k.proj, values, stream_);
}

template <typename F>
void DeviceGpt2Decoder<F>::final_norm_row(const F* p, int rows) {
  const Buffers& k = *buffers_;
  const int C = k.config.n_embd;
  const F* last = k.x + static_cast<std::size_t>(rows - 1) * C;
  layernorm_forward(k.ln, k.mean, k.rstd, last, p + k.lnfw, p + k.lnfb, 1, C, stream_);
}

template class DeviceGpt2Decoder<float>;
template class DeviceGpt2Decoder<__nv_bfloat16>;
template class DeviceGpt2Decoder<__half>;

}  // namespace autotrain::model::gpu
