// The Llama-style decoder's parts of the device driver (gpu/device_model_base.hpp):
// src/model/llama.cpp step for step (same tensor offsets, same gradient buffers), with the kernels
// of kernels/gpu/ queued on one stream. Shapes: B batch, T positions, C hidden, NH heads, NKV
// key/value heads, D head_dim, Q = NH·D, KV = NKV·D, QKV = Q + 2·KV, I intermediate, L layers,
// V vocabulary, Vp padded vocabulary.
// Invariants: all device memory is one allocation made at construction (llama_buffers.hpp);
// parameter gradients accumulate (+=); activation gradients are overwritten, except the residual
// stream's single gradient buffer [B, T, C], zeroed before the final norm's backward, which every
// RMSNorm backward adds into. With activation checkpointing (`recompute`, model/recompute.hpp)
// the stream keeps a slot per layer and the tensors backward recomputes have one, which it refills
// before block l's backward (except the last block's, still there): under full by re-running the
// block's forward from its input, under selective its two RMSNorms and the gated unit from the
// kept mid and gate_up; the same kernels on the same inputs, so the same bits.
// Written once per device, for the reason src/model/gpu/gpt2.cpp gives;
// tests/model/gpu/llama_test.cpp keeps the two in step (loss, every gradient, the hook order, the
// profile rows, the decoder). Host code only (it launches no kernel of its own).
#include "autotrain/model/gpu/llama.hpp"

#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

#include "../check_tokens.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/gpu/check.hpp"
#include "autotrain/core/log.hpp"
#include "autotrain/kernels/gpu/attention.hpp"
#include "autotrain/kernels/gpu/crossentropy.hpp"
#include "autotrain/kernels/gpu/cudnn_attention.hpp"
#include "autotrain/kernels/gpu/encoder.hpp"
#include "autotrain/kernels/gpu/flash_attention.hpp"
#include "autotrain/kernels/gpu/residual.hpp"
#include "autotrain/kernels/gpu/rmsnorm.hpp"
#include "autotrain/kernels/gpu/rope.hpp"
#include "autotrain/kernels/gpu/swiglu.hpp"
#include "event_clock.hpp"
#include "llama_buffers.hpp"

namespace autotrain::model::gpu {

using namespace autotrain::kernels::gpu;
using autotrain::kernels::AttentionPath;
using autotrain::kernels::Transpose;

namespace {

// One layer's attention with grouped key/value heads on the path the model chose: cuDNN's fused
// attention or our flash kernels (16-bit types only), else the path AUTOTRAIN_CUDA_ATTENTION
// selects.
template <typename F>
void layer_attention_forward(AttentionPath path, F* out, F* att, float* lse, const F* qkv, int B,
                             int T, int NH, int NKV, int D, cudaStream_t stream,
                             const kernels::AttentionOptions& options) {
  if constexpr (sizeof(F) == 2) {
    if (path == AttentionPath::cudnn) {
      cudnn_attention_forward(out, lse, qkv, B, T, NH, NKV, D, stream, options);
      return;
    }
    if (path == AttentionPath::flash) {
      flash_attention_forward(out, lse, qkv, B, T, NH, NKV, D, stream, options);
      return;
    }
  }
  attention_forward(out, att, qkv, B, T, NH, NKV, D, stream, options);
}

template <typename F>
void layer_attention_backward(AttentionPath path, F* dqkv, F* datt, float* delta, const F* dout,
                              const F* qkv, const F* out, const F* att, const float* lse, int B,
                              int T, int NH, int NKV, int D, cudaStream_t stream,
                              const kernels::AttentionOptions& options) {
  if constexpr (sizeof(F) == 2) {
    if (path == AttentionPath::cudnn) {
      cudnn_attention_backward(dqkv, delta, dout, qkv, out, lse, B, T, NH, NKV, D, stream, options);
      return;
    }
    if (path == AttentionPath::flash) {
      flash_attention_backward(dqkv, delta, dout, qkv, out, lse, B, T, NH, NKV, D, stream, options);
      return;
    }
  }
  attention_backward(dqkv, datt, dout, qkv, att, B, T, NH, NKV, D, stream, options);
}

// Each distinct set of layer options' cuDNN shape (none in fp32).
template <typename F>
std::vector<kernels::SdpaShape> attention_shapes(const ModelConfig& c, int B, int T) {
  std::vector<kernels::SdpaShape> shapes;
  if constexpr (sizeof(F) == 2) {
    for (int l = 0; l < c.n_layer; ++l) {
      const kernels::SdpaShape shape =
          kernels::sdpa_shape(std::is_same_v<F, __nv_bfloat16>, B, T, c.n_head, c.kv_heads(),
                              c.head_size(), attention_options(c, l, T));
      if (std::find(shapes.begin(), shapes.end(), shape) == shapes.end()) shapes.push_back(shape);
    }
  }
  return shapes;
}

}  // namespace

template <typename F>
DeviceLlama<F>::DeviceLlama(const ParamLayout& layout, int B, int T, cudaStream_t stream,
                            const BlasHandle& blas, Recompute recompute)
    : DeviceModelBase<F>(layout.config(), B, T, stream, blas, recompute,
                         "max_position_embeddings") {
  const ModelConfig& c = layout.config();
  AT_CHECK(c.family == Family::llama,
           "internal: DeviceLlama needs a layout of a family on the "
           "Llama-style decoder");
  AT_CHECK(c.head_size() <= kMaxAttentionHeadSize && c.head_size() % 2 == 0,
           "model: the CUDA attention and rotary kernels need an even head_dim of at most ",
           kMaxAttentionHeadSize, ", got ", c.head_size());
  AT_CHECK(c.n_embd <= kRmsNormMaxChannels, "model: hidden_size = ", c.n_embd,
           " is wider than the ", kRmsNormMaxChannels, " channels the CUDA RMSNorm takes");
  const int NH = c.n_head, NKV = c.kv_heads(), D = c.head_size();
  this->choose_attention(flash_attention_supports(sizeof(F), NH, NKV, D),
                         attention_shapes<F>(c, B, T));
  buffers_ = std::make_unique<Buffers>(layout, B, T, this->fused_attention(), recompute, stream_);
  const Buffers& b = *buffers_;
  this->family_ = {b.lnf, b.dsmall, b.head, b.memory.bytes()};
  attention_prepare(stream_);  // the attention's cuBLAS workspace, now rather than in step 1
}

template <typename F>
DeviceLlama<F>::~DeviceLlama() = default;

template <typename F>
std::size_t DeviceLlama<F>::planned_activation_bytes(const ParamLayout& layout, int B, int T,
                                                     Recompute recompute) {
  const ModelConfig& c = layout.config();
  const bool fused = Base::plans_fused_attention(
      flash_attention_supports(sizeof(F), c.n_head, c.kv_heads(), c.head_size()));
  return Base::driver_bytes(c, B, T) + Buffers(layout, B, T, fused, recompute, std::nullopt).bytes;
}

template <typename F>
void DeviceLlama<F>::embed_forward(const F* p) {
  const Buffers& b = *buffers_;
  // The embedding lookup: the encoder with a position table of zeros (x + 0 is x).
  encoder_forward(b.residual, this->driver_.inputs, p + b.embed, b.zeros, B_, T_, b.config.n_embd,
                  stream_, embed_scale<F>(b.config));
}

// Block l from layer(l).in to layer(l).out.
template <typename F>
void DeviceLlama<F>::block_forward(int l, const F* p, BasicLinearAdapter<F>* adapter,
                                   EventClock& clock) {
  const Buffers& b = *buffers_;
  const ModelConfig& c = b.config;
  const int B = B_, T = T_;
  const int C = c.n_embd, NH = c.n_head, NKV = c.kv_heads(), D = c.head_size();
  const int R = c.rotary_size();
  const int Q = c.q_size(), QKV = c.qkv_size(), I = c.mlp_size();
  const std::size_t bt = b.bt;
  const auto eps = static_cast<float>(c.norm_eps);
  const float w0 = c.norm_offset ? 1.0f : 0.0f;
  const auto x = b.layer(l);
  // y += the adapter's term of the linear at `weight` (LoRA's dropout in training), if any.
  const auto adapt = [&](std::size_t weight, const F* in, F* y, int IC, int OC) {
    if (adapter) adapter->forward(ParamLayout::block_unit(l), weight, in, y, bt, IC, OC);
  };
  // A branch's output projection (`weight`, `bias`) of `in` joins the stream: out = from + y, or
  // with sandwich norms from + rmsnorm(y) (y kept in `kept`, its rstd in `rstd`).
  const auto join = [&](F* out, const F* from, std::size_t weight, std::size_t bias, const F* in,
                        int IC, F* kept, float* rstd, std::size_t norm) {
    F* y = c.sandwich_norms ? kept : b.proj;
    linear_forward(blas_, y, in, p + weight, tensor_at(p, bias), bt, IC, C, stream_);
    adapt(weight, in, y, IC, C);
    clock.lap(kMatmul);
    if (c.sandwich_norms) {
      rmsnorm_forward(b.proj, rstd, y, p + norm, bt, 1, C, b.C, eps, stream_, w0);
      clock.lap(kNorm);
    }
    residual_forward(out, from, b.proj, bt * b.C, stream_);
    clock.lap(kResidual);
  };
  rmsnorm_forward(x.ln1, x.rstd1, x.in, p + b.ln1w, bt, 1, C, b.C, eps, stream_, w0);
  clock.lap(kNorm);
  if (c.qk_norm) {
    linear_forward(blas_, x.qkv_pre, x.ln1, p + b.qkvw, tensor_at(p, b.qkvb), bt, C, QKV, stream_);
    adapt(b.qkvw, x.ln1, x.qkv_pre, C, QKV);
    clock.lap(kMatmul);
    // v passes through; each head of q and of k is normed (Qwen3's q_norm, k_norm).
    AT_CUDA_CHECK(cudaMemcpyAsync(x.qkv, x.qkv_pre, bt * b.QKV * sizeof(F),
                                  cudaMemcpyDeviceToDevice, stream_));
    rmsnorm_forward(x.qkv, x.qk_rstd, x.qkv_pre, p + b.qnorm, bt, NH, D, b.QKV, eps, stream_, w0);
    rmsnorm_forward(x.qkv + Q, x.qk_rstd + bt * static_cast<std::size_t>(NH), x.qkv_pre + Q,
                    p + b.knorm, bt, NKV, D, b.QKV, eps, stream_, w0);
    clock.lap(kNorm);
  } else {
    linear_forward(blas_, x.qkv, x.ln1, p + b.qkvw, tensor_at(p, b.qkvb), bt, C, QKV, stream_);
    adapt(b.qkvw, x.ln1, x.qkv, C, QKV);
    clock.lap(kMatmul);
  }
  const float* cos = c.local_rope(l) ? b.local_cos : b.rope_cos;
  const float* sin = c.local_rope(l) ? b.local_sin : b.rope_sin;
  rope_forward(x.qkv, cos, sin, B, T, NH, D, R, b.QKV, 0, stream_);
  rope_forward(x.qkv + Q, cos, sin, B, T, NKV, D, R, b.QKV, 0, stream_);
  layer_attention_forward(attention_, x.atty, x.att, x.flash_lse, x.qkv, B, T, NH, NKV, D, stream_,
                          attention_options(c, l, T));
  clock.lap(kAttention);
  join(x.mid, x.in, b.ow, b.ob, x.atty, Q, x.attn_out, x.rstd_attn, b.attn_post);
  rmsnorm_forward(x.ln2, x.rstd2, x.mid, p + b.ln2w, bt, 1, C, b.C, eps, stream_, w0);
  clock.lap(kNorm);
  linear_forward(blas_, x.gate_up, x.ln2, p + b.guw, tensor_at(p, b.gub), bt, C, 2 * I, stream_);
  adapt(b.guw, x.ln2, x.gate_up, C, 2 * I);
  clock.lap(kMatmul);
  gated_forward(c.gate, x.act, x.gate_up, bt, I, stream_);
  clock.lap(kActivation);
  join(x.out, x.mid, b.downw, b.downb, x.act, I, x.mlp_out, x.rstd_mlp, b.mlp_post);
}

// Selective recompute: block l's two RMSNorms from its input and kept mid, the gated unit from its
// kept gate_up (the adapters' terms are in gate_up already).
template <typename F>
void DeviceLlama<F>::block_recompute(int l, const F* p, EventClock& clock) {
  const Buffers& b = *buffers_;
  const ModelConfig& c = b.config;
  const auto eps = static_cast<float>(c.norm_eps);
  const float w0 = c.norm_offset ? 1.0f : 0.0f;
  const auto x = b.layer(l);
  rmsnorm_forward(x.ln1, x.rstd1, x.in, p + b.ln1w, b.bt, 1, c.n_embd, b.C, eps, stream_, w0);
  rmsnorm_forward(x.ln2, x.rstd2, x.mid, p + b.ln2w, b.bt, 1, c.n_embd, b.C, eps, stream_, w0);
  clock.lap(kNorm);
  gated_forward(c.gate, x.act, x.gate_up, b.bt, c.mlp_size(), stream_);
  clock.lap(kActivation);
}

template <typename F>
void DeviceLlama<F>::final_norm_forward(const F* p) {
  const Buffers& b = *buffers_;
  const ModelConfig& c = b.config;
  rmsnorm_forward(b.lnf, b.rstdf, b.layer(c.n_layer - 1).out, p + b.normw, b.bt, 1, c.n_embd, b.C,
                  static_cast<float>(c.norm_eps), stream_, c.norm_offset ? 1.0f : 0.0f);
}

template <typename F>
void DeviceLlama<F>::final_norm_backward(const F* p, F* g) {
  const Buffers& b = *buffers_;
  const ModelConfig& c = b.config;
  AT_CUDA_CHECK(cudaMemsetAsync(b.dresidual, 0, b.bt * b.C * sizeof(F), stream_));
  rmsnorm_backward(b.dresidual, g ? g + b.normw : b.norm_discard, b.dsmall,
                   b.layer(c.n_layer - 1).out, p + b.normw, b.rstdf, b.scratch, b.bt, 1, c.n_embd,
                   b.C, stream_, c.norm_offset ? 1.0f : 0.0f);
}

template <typename F>
void DeviceLlama<F>::embed_backward(F* g, const TokenRuns& runs) {
  const Buffers& b = *buffers_;
  // Only the token rows take the gradient (dsmall, free by now, absorbs the zero position
  // table's).
  encoder_backward(g + b.embed, b.dsmall, b.dresidual, runs, B_, T_, b.config.n_embd, stream_,
                   embed_scale<F>(b.config));
}

template <typename F>
void DeviceLlama<F>::block_backward(int l, const F* p, F* g, BasicLinearAdapter<F>* adapter,
                                    EventClock& clock) {
  Buffers& b = *buffers_;
  const ModelConfig& c = b.config;
  const int B = B_, T = T_;
  const int C = c.n_embd, NH = c.n_head, NKV = c.kv_heads(), D = c.head_size();
  const int R = c.rotary_size();
  const int Q = c.q_size(), QKV = c.qkv_size(), I = c.mlp_size();
  const std::size_t bt = b.bt;
  F* dres = b.dresidual;
  const int unit = ParamLayout::block_unit(l);
  const auto x = b.layer(l);
  // dx += the adapter's term of the linear at `weight` (after the linear's own backward).
  const auto adapt = [&](std::size_t weight, const F* in, const F* dy, F* dx, int IC, int OC) {
    if (adapter) adapter->backward(unit, weight, in, dy, dx, bt, IC, OC);
  };
  const float w0 = c.norm_offset ? 1.0f : 0.0f;
  // d(a branch's projection output) from d(stream) = dres: itself, or through the sandwich norm
  // of the output `kept` (its rstd `rstd`, its weight at `norm`).
  const auto branch_grad = [&](const F* kept, const float* rstd, std::size_t norm) -> const F* {
    if (!c.sandwich_norms) return dres;
    AT_CUDA_CHECK(cudaMemsetAsync(b.dpost, 0, bt * b.C * sizeof(F), stream_));
    rmsnorm_backward(b.dpost, g + norm, dres, kept, p + norm, rstd, b.scratch, bt, 1, C, b.C,
                     stream_, w0);
    clock.lap(kNorm);
    return b.dpost;
  };

  // MLP: out = mid + [norm](down(gate(gate_up(rmsnorm(mid))))), dres = d out
  const F* dy = branch_grad(x.mlp_out, x.rstd_mlp, b.mlp_post);
  linear_backward(blas_, b.dmid, g + b.downw, tensor_at(g, b.downb), dy, x.act, p + b.downw,
                  b.scratch, bt, I, C, stream_);
  adapt(b.downw, x.act, dy, b.dmid, I, C);
  clock.lap(kMatmul);
  gated_backward(c.gate, b.dwide, b.dmid, x.gate_up, bt, I, stream_);
  clock.lap(kActivation);
  linear_backward(blas_, b.dsmall, g + b.guw, tensor_at(g, b.gub), b.dwide, x.ln2, p + b.guw,
                  b.scratch, bt, C, 2 * I, stream_);
  adapt(b.guw, x.ln2, b.dwide, b.dsmall, C, 2 * I);
  clock.lap(kMatmul);
  rmsnorm_backward(dres, g + b.ln2w, b.dsmall, x.mid, p + b.ln2w, x.rstd2, b.scratch, bt, 1, C, b.C,
                   stream_, w0);
  clock.lap(kNorm);
  // Attention: mid = x + [norm](o_proj(attention(rope(norm_qk(qkv(rmsnorm(x))))))), dres = d mid
  dy = branch_grad(x.attn_out, x.rstd_attn, b.attn_post);
  linear_backward(blas_, b.dsmall, g + b.ow, tensor_at(g, b.ob), dy, x.atty, p + b.ow, b.scratch,
                  bt, Q, C, stream_);
  adapt(b.ow, x.atty, dy, b.dsmall, Q, C);
  clock.lap(kMatmul);
  layer_attention_backward(attention_, b.dwide, b.datt, b.flash_delta, b.dsmall, x.qkv, x.atty,
                           x.att, x.flash_lse, B, T, NH, NKV, D, stream_,
                           attention_options(c, l, T));
  const float* cos = c.local_rope(l) ? b.local_cos : b.rope_cos;
  const float* sin = c.local_rope(l) ? b.local_sin : b.rope_sin;
  rope_backward(b.dwide, cos, sin, B, T, NH, D, R, b.QKV, 0, stream_);
  rope_backward(b.dwide + Q, cos, sin, B, T, NKV, D, R, b.QKV, 0, stream_);
  clock.lap(kAttention);
  const F* dqkv = b.dwide;
  if (c.qk_norm) {
    // dqkv_pre = [d q_pre, d k_pre, d v]: v passed through unchanged, and the norms' backward
    // adds into q's and k's columns, so those start at zero. There is no strided memset among
    // our kernels (nor cudaMemset2D in the emulator): the forward norm with a zero weight
    // writes zeros over the q and k heads of every row (from finite activations: ±0 exactly).
    AT_CUDA_CHECK(cudaMemcpyAsync(b.dmid, b.dwide, bt * b.QKV * sizeof(F), cudaMemcpyDeviceToDevice,
                                  stream_));
    rmsnorm_forward(b.dmid, b.scratch, x.qkv_pre, b.zeros, bt, NH + NKV, D, b.QKV, 1.0f, stream_);
    rmsnorm_backward(b.dmid, g + b.qnorm, b.dwide, x.qkv_pre, p + b.qnorm, x.qk_rstd, b.scratch, bt,
                     NH, D, b.QKV, stream_, w0);
    rmsnorm_backward(b.dmid + Q, g + b.knorm, b.dwide + Q, x.qkv_pre + Q, p + b.knorm,
                     x.qk_rstd + bt * static_cast<std::size_t>(NH), b.scratch, bt, NKV, D, b.QKV,
                     stream_, w0);
    clock.lap(kNorm);
    dqkv = b.dmid;
  }
  linear_backward(blas_, b.dsmall, g + b.qkvw, tensor_at(g, b.qkvb), dqkv, x.ln1, p + b.qkvw,
                  b.scratch, bt, C, QKV, stream_);
  adapt(b.qkvw, x.ln1, dqkv, b.dsmall, C, QKV);
  clock.lap(kMatmul);
  rmsnorm_backward(dres, g + b.ln1w, b.dsmall, x.in, p + b.ln1w, x.rstd1, b.scratch, bt, 1, C, b.C,
                   stream_, w0);
  clock.lap(kNorm);
}

template class DeviceLlama<float>;
template class DeviceLlama<__nv_bfloat16>;
template class DeviceLlama<__half>;

}  // namespace autotrain::model::gpu
