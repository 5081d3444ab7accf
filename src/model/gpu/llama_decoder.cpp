// Llama-family decoding with a key/value cache on one CUDA device (model/gpu/llama_decoder.hpp):
// the CPU model's feed_token (src/model/llama.cpp) step for step, on a step's rows (one while
// generating), with the kernels of kernels/gpu/ queued on one stream. Shapes as
// src/model/gpu/llama.cpp's; P the cache's positions. Host code only (a .cpp: the header needs
// C++20).
#include "autotrain/model/gpu/llama_decoder.hpp"

#include <algorithm>

#include "autotrain/core/error.hpp"
#include "autotrain/core/gpu/check.hpp"
#include "autotrain/kernels/gpu/attention.hpp"
#include "autotrain/kernels/gpu/decode.hpp"
#include "autotrain/kernels/gpu/residual.hpp"
#include "autotrain/kernels/gpu/rmsnorm.hpp"
#include "autotrain/kernels/gpu/rope.hpp"
#include "autotrain/kernels/gpu/swiglu.hpp"
#include "llama_layout.hpp"

namespace autotrain::model::gpu {

using namespace autotrain::kernels::gpu;
using autotrain::kernels::Transpose;

// The cache and a step's rows (S of them at most) of each activation, carved from one allocation.
template <typename F>
struct DeviceLlamaDecoder<F>::Buffers : LlamaOffsets {
  ModelConfig config;
  autotrain::gpu::DeviceBuffer memory;
  F* cache;                      // [L, P, QKV] each layer's attention input rows
  F *x, *ln, *proj, *mid;        // [S, C]
  F* normed;                     // [S, C] a branch's output normed (sandwich_norms)
  F* pre;                        // [S, QKV] the qkv rows before the q/k norm (qk_norm)
  F* qkv;                        // [S, QKV] the new rows', before the cache takes them
  F* atty;                       // [S, Q]
  F* gate_up;                    // [S, 2I]
  F* act;                        // [S, I]
  float* scores;                 // decode_attention's scratch
  F* logits;                     // [Vp]
  float* rstd;                   // [S, NH + NKV] RMSNorm statistics (not read)
  float *rope_cos, *rope_sin;    // [P, R/2]
  float *local_cos, *local_sin;  // the sliding layers' (rope_local_theta), or null
  std::int32_t* tokens;          // [P] the tokens fed
  std::int32_t* position;        // [1] the first new row's position

  Buffers(const ParamLayout& layout, int positions, int most_rows, cudaStream_t stream)
      : LlamaOffsets(layout), config(layout.config()) {
    const ModelConfig& c = config;
    const auto P = static_cast<std::size_t>(positions);
    const auto S = static_cast<std::size_t>(most_rows);
    const auto L = static_cast<std::size_t>(c.n_layer);
    const auto C = static_cast<std::size_t>(c.n_embd);
    const auto QKV = static_cast<std::size_t>(c.qkv_size());
    const auto I = static_cast<std::size_t>(c.mlp_size());
    const auto half = static_cast<std::size_t>(c.rotary_size() / 2);
    const std::size_t local = c.rope_local_theta > 0 ? 1 : 0;
    auto carve = [&](autotrain::gpu::SubBuffers parts) {
      parts.take(cache, L * P * QKV);
      for (F** rows : {&x, &ln, &proj, &mid, &normed}) parts.take(*rows, S * C);
      parts.take(pre, S * QKV);
      parts.take(qkv, S * QKV);
      parts.take(atty, S * static_cast<std::size_t>(c.q_size()));
      parts.take(gate_up, S * 2 * I);
      parts.take(act, S * I);
      parts.take(scores,
                 decode_attention_scratch_floats(positions, most_rows, c.n_head, c.head_size()));
      parts.take(logits, static_cast<std::size_t>(c.padded_vocab_size));
      parts.take(rstd, S * static_cast<std::size_t>(c.n_head + c.kv_heads()));
      parts.take(rope_cos, P * half);
      parts.take(rope_sin, P * half);
      parts.take(local_cos, local * P * half);
      parts.take(local_sin, local * P * half);
      parts.take(tokens, P);
      parts.take(position, 1);
      return parts.bytes();
    };
    memory = autotrain::gpu::DeviceBuffer(carve(autotrain::gpu::SubBuffers(nullptr)));
    carve(autotrain::gpu::SubBuffers(memory.data()));
    upload_rope_tables(c, positions, rope_cos, rope_sin, stream);
    if (local) {
      upload_rope_tables(c, positions, local_cos, local_sin, stream, true);
    } else {
      local_cos = local_sin = nullptr;
    }
  }
};

template <typename F>
DeviceLlamaDecoder<F>::DeviceLlamaDecoder(const ParamLayout& layout, int positions,
                                          cudaStream_t stream, const BlasHandle& blas,
                                          DecodeLaunch launch)
    : DeviceDecoderBase<F>(layout.config(), positions, stream, blas, launch) {
  const ModelConfig& c = layout.config();
  AT_CHECK(c.family == Family::llama,
           "internal: DeviceLlamaDecoder needs a layout of a family on "
           "the Llama-style decoder");
  AT_CHECK(c.head_size() <= kMaxAttentionHeadSize && c.head_size() % 2 == 0,
           "model: the CUDA attention and rotary kernels need an even head_dim of at most ",
           kMaxAttentionHeadSize, ", got ", c.head_size());
  AT_CHECK(c.n_embd <= kRmsNormMaxChannels, "model: hidden_size = ", c.n_embd,
           " is wider than the ", kRmsNormMaxChannels, " channels the CUDA RMSNorm takes");
  buffers_ = std::make_unique<Buffers>(layout, positions, this->rows_, stream_);
  const Buffers& k = *buffers_;
  this->decode_ = {k.tokens, k.position, k.ln, k.logits, k.head, k.memory.bytes()};
}

template <typename F>
DeviceLlamaDecoder<F>::~DeviceLlamaDecoder() = default;

template <typename F>
void DeviceLlamaDecoder<F>::embed_rows(const F* p, int rows) {
  const Buffers& k = *buffers_;
  decode_embed(k.x, k.tokens, k.position, rows, p + k.embed, static_cast<const F*>(nullptr),
               k.config.n_embd, embed_scale<F>(k.config), stream_);
}

template <typename F>
void DeviceLlamaDecoder<F>::block_rows(int l, const F* p, int rows) {
  const Buffers& k = *buffers_;
  const ModelConfig& c = k.config;
  const int C = c.n_embd, NH = c.n_head, NKV = c.kv_heads(), D = c.head_size();
  const int R = c.rotary_size();
  const int Q = c.q_size(), QKV = c.qkv_size(), I = c.mlp_size();
  const auto uC = static_cast<std::size_t>(C), uQKV = static_cast<std::size_t>(QKV);
  const auto P = static_cast<std::size_t>(this->positions_);
  const auto N = static_cast<std::size_t>(rows);
  const auto eps = static_cast<float>(c.norm_eps);
  const float w0 = c.norm_offset ? 1.0f : 0.0f;
  // out = from + the branch's projection of `in` (through its sandwich norm, if any).
  const auto join = [&](F* out, const F* from, std::size_t weight, std::size_t bias, const F* in,
                        int IC, std::size_t norm) {
    linear_forward(blas_, k.proj, in, p + weight, tensor_at(p, bias), N, IC, C, stream_);
    const F* y = k.proj;
    if (c.sandwich_norms) {
      rmsnorm_forward(k.normed, k.rstd, k.proj, p + norm, N, 1, C, uC, eps, stream_, w0);
      y = k.normed;
    }
    residual_forward(out, from, y, N * uC, stream_);
  };
  // This layer's attention input rows of positions 0..t + rows - 1; rows t.. are computed now (in
  // k.qkv), then stored.
  F* cache = k.cache + static_cast<std::size_t>(l) * P * uQKV;
  F* qkv = k.qkv;
  rmsnorm_forward(k.ln, k.rstd, k.x, p + k.ln1w, N, 1, C, uC, eps, stream_, w0);
  if (c.qk_norm) {
    linear_forward(blas_, k.pre, k.ln, p + k.qkvw, tensor_at(p, k.qkvb), N, C, QKV, stream_);
    AT_CUDA_CHECK(cudaMemcpyAsync(qkv, k.pre, N * uQKV * sizeof(F), cudaMemcpyDeviceToDevice,
                                  stream_));  // v passes through
    rmsnorm_forward(qkv, k.rstd, k.pre, p + k.qnorm, N, NH, D, uQKV, eps, stream_, w0);
    rmsnorm_forward(qkv + Q, k.rstd + N * NH, k.pre + Q, p + k.knorm, N, NKV, D, uQKV, eps, stream_,
                    w0);
  } else {
    linear_forward(blas_, qkv, k.ln, p + k.qkvw, tensor_at(p, k.qkvb), N, C, QKV, stream_);
  }
  const float* cos = c.local_rope(l) ? k.local_cos : k.rope_cos;
  const float* sin = c.local_rope(l) ? k.local_sin : k.rope_sin;
  rope_forward_at(qkv, cos, sin, rows, NH, D, R, uQKV, k.position, stream_);
  rope_forward_at(qkv + Q, cos, sin, rows, NKV, D, R, uQKV, k.position, stream_);
  decode_store_rows(cache, qkv, rows, uQKV, k.position, stream_);
  // The layer's window where it has one (a window wider than the cache never hides a key).
  decode_attention(k.atty, k.scores, cache, k.position, rows, this->positions_, NH, NKV, D,
                   attention_options(c, l, this->positions_ + 1), stream_);
  join(k.mid, k.x, k.ow, k.ob, k.atty, Q, k.attn_post);
  rmsnorm_forward(k.ln, k.rstd, k.mid, p + k.ln2w, N, 1, C, uC, eps, stream_, w0);
  linear_forward(blas_, k.gate_up, k.ln, p + k.guw, tensor_at(p, k.gub), N, C, 2 * I, stream_);
  gated_forward(c.gate, k.act, k.gate_up, N, I, stream_);
  join(k.x, k.mid, k.downw, k.downb, k.act, I, k.mlp_post);
}

template <typename F>
void DeviceLlamaDecoder<F>::final_norm_row(const F* p, int rows) {
  const Buffers& k = *buffers_;
  const ModelConfig& c = k.config;
  const auto C = static_cast<std::size_t>(c.n_embd);
  rmsnorm_forward(k.ln, k.rstd, k.x + static_cast<std::size_t>(rows - 1) * C, p + k.normw, 1, 1,
                  c.n_embd, C, static_cast<float>(c.norm_eps), stream_,
                  c.norm_offset ? 1.0f : 0.0f);
}

template class DeviceLlamaDecoder<float>;
template class DeviceLlamaDecoder<__nv_bfloat16>;
template class DeviceLlamaDecoder<__half>;

}  // namespace autotrain::model::gpu
