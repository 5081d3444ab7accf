// GPT-2's parts of the device driver (gpu/device_model_base.hpp): src/model/gpt2.cpp step for step
// (same tensor offsets, same residual-gradient trick), with the kernels of kernels/gpu/ queued on
// one stream. Shapes: B batch, T positions, C = n_embd, NH heads,
// L layers, V vocabulary, Vp padded vocabulary.
// Invariants: all device memory is one allocation made at construction; parameter gradients
// accumulate (+=); activation gradients are overwritten, except the residual stream, whose single
// gradient buffer [B, T, C] is zeroed before ln_f backward and collects every block's
// contribution (LayerNorm backward adds into it). With activation checkpointing (`recompute`,
// model/recompute.hpp) the block outputs (residual3) keep a slot per layer and the tensors that
// backward recomputes have one, which backward refills before block l's backward (except the
// last block's, still there), with the same kernels on the same inputs: the same bits. Under
// full, by re-running block l's forward from its input; under selective, its two LayerNorms and
// the GELU from the kept residual2 and fch. Where cuBLASLt's epilogue may compute the GELU
// (bf16/fp16: matmul_gelu_may_fuse) selective keeps fch_gelu too, for the epilogue's GELU reads
// the product before it is rounded to fch and no kernel can repeat it from fch.
// A family's parts are written once per device (the hook order once for both,
// model/hook_order.hpp): the device kernels take a stream, the cuBLASLt handle and fused
// epilogues, and keep fp32 statistics, so one body for both would be a macro layer over two
// kernel sets. tests/model/gpu/gpt2_test.cpp keeps the two in step (loss, every gradient, the
// hook order and the profile rows).
// This is host code only (it launches no kernel of its own), so it is a .cpp compiled as C++20:
// the header's std::span needs C++20 and the .cu files are C++17 (CMake 3.25 has no C++20 flag for
// nvcc).
#include "autotrain/model/gpu/gpt2.hpp"

#include <algorithm>
#include <string>
#include <type_traits>

#include "../check_tokens.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/gpu/check.hpp"
#include "autotrain/core/log.hpp"
#include "autotrain/kernels/gpu/attention.hpp"
#include "autotrain/kernels/gpu/crossentropy.hpp"
#include "autotrain/kernels/gpu/cudnn_attention.hpp"
#include "autotrain/kernels/gpu/encoder.hpp"
#include "autotrain/kernels/gpu/flash_attention.hpp"
#include "autotrain/kernels/gpu/gelu.hpp"
#include "autotrain/kernels/gpu/layernorm.hpp"
#include "autotrain/kernels/gpu/residual.hpp"
#include "event_clock.hpp"

namespace autotrain::model::gpu {

using namespace autotrain::kernels::gpu;
using autotrain::kernels::AttentionPath;
using autotrain::kernels::Transpose;

// The model's shape, the tensor offsets inside a unit, and every device buffer, carved from one
// allocation. Per-layer activations are [L, ...] with a stride of one layer's tensor, or [1, ...]
// for those `mode` recomputes (model/recompute.hpp: Kept); residual3 keeps L slots.
// LayerNorm statistics and losses are fp32 whatever F is (the kernels' contract).
template <typename F>
struct DeviceGpt2<F>::Buffers : TensorOffsets {
  ModelConfig config;

  std::size_t bt;          // B·T: stride of per-layer [B, T] statistics
  std::size_t btc;         // B·T·C: stride of per-layer [B, T, C] tensors
  std::size_t att_stride;  // B·NH·T·T
  Recompute mode;
  Kept gelu_kind;  // fch_gelu's: costly where the GELU may ride in cuBLASLt's epilogue

  std::size_t bytes;  // of the one allocation
  autotrain::gpu::DeviceBuffer memory;
  F* encoded;                  // [B, T, C]
  F* ln1;                      // [L, B, T, C]
  float *ln1_mean, *ln1_rstd;  // [L, B, T]
  F* qkv;                      // [L, B, T, 3C]
  F* atty;                     // [L, B, T, C]
  F* att;                      // [L, B, NH, T, T]
  F* residual2;                // [L, B, T, C]
  F* ln2;                      // [L, B, T, C]
  float *ln2_mean, *ln2_rstd;  // [L, B, T]
  F *fch, *fch_gelu;           // [L, B, T, 4C]
  F* residual3;                // [L, B, T, C]
  F* lnf;                      // [B, T, C]
  float *lnf_mean, *lnf_rstd;  // [B, T]
  F* proj;                     // [B, T, C] output of c_proj before the residual add
  F* dresidual;                // [B, T, C] the residual stream, accumulated
  F* dsmall;                   // [B, T, C] d(ln output) / d(attention output) / d(lnf)
  F* dlarge;                   // [B, T, 4C] d(fch) / d(qkv)
  F* datt;                     // [B, NH, T, T] attention_backward's d(scores) scratch
  float* scratch;              // LayerNorm and bias-gradient partial sums
  F* norm_discard;             // [2C] a frozen ln_f's gradients (LoRA), never read
  // Flash attention keeps no [T, T] matrices (att and datt are then empty) but these:
  std::size_t rows_stride;  // B·NH·T
  float* flash_lse;         // [L, B, NH, T] each row's log-sum-exp
  float* flash_delta;       // [B, NH, T] the backward's Σ dout·out

  // Layer l's slice of the per-layer tensors: what its forward writes and its backward reads.
  struct Layer {
    F* ln1;
    float *ln1_mean, *ln1_rstd;
    F *qkv, *atty, *att, *residual2, *ln2;
    float *ln2_mean, *ln2_rstd;
    F *fch, *fch_gelu, *residual3;
    float* flash_lse;
  };
  Layer layer(int l) const {
    const auto i = static_cast<std::size_t>(l);
    const std::size_t s = slot_of(Kept::cheap, mode, l);   // the norms
    const std::size_t k = slot_of(Kept::costly, mode, l);  // qkv, attention, residual2, fch
    const std::size_t g = slot_of(gelu_kind, mode, l);
    return {ln1 + s * btc,       ln1_mean + s * bt,
            ln1_rstd + s * bt,   qkv + k * 3 * btc,
            atty + k * btc,      att + k * att_stride,
            residual2 + k * btc, ln2 + s * btc,
            ln2_mean + s * bt,   ln2_rstd + s * bt,
            fch + k * 4 * btc,   fch_gelu + g * 4 * btc,
            residual3 + i * btc, flash_lse + k * rows_stride};
  }

  // Sizes the buffers (bytes) and, where `allocate`, allocates them (else nothing is: the memory
  // plan's figure).
  Buffers(const ParamLayout& layout, int B, int T, bool flash, Recompute mode_, bool allocate)
      : TensorOffsets(layout),
        config(layout.config()),
        mode(mode_),
        gelu_kind(matmul_gelu_may_fuse<F>(4 * config.n_embd) ? Kept::costly : Kept::cheap) {
    const std::size_t layers = static_cast<std::size_t>(config.n_layer);
    const std::size_t S = slots_of(Kept::cheap, mode, layers);   // slots of the cheap tensors
    const std::size_t L = slots_of(Kept::costly, mode, layers);  // of the costly ones
    const std::size_t G = slots_of(gelu_kind, mode, layers);     // of fch_gelu
    const std::size_t C = static_cast<std::size_t>(config.n_embd);
    bt = static_cast<std::size_t>(B) * static_cast<std::size_t>(T);
    btc = bt * C;
    rows_stride = static_cast<std::size_t>(B) * static_cast<std::size_t>(config.n_head) *
                  static_cast<std::size_t>(T);
    att_stride = flash ? 0 : rows_stride * static_cast<std::size_t>(T);
    const std::size_t flash_rows = flash ? rows_stride : 0;
    const std::size_t scratch_floats =
        std::max(layernorm_backward_scratch_floats(bt, config.n_embd),
                 matmul_backward_scratch_floats(bt, 4 * config.n_embd));

    auto carve = [&](autotrain::gpu::SubBuffers parts) {
      parts.take(encoded, btc);
      parts.take(ln1, S * btc);
      parts.take(ln1_mean, S * bt);
      parts.take(ln1_rstd, S * bt);
      parts.take(qkv, L * 3 * btc);
      parts.take(atty, L * btc);
      parts.take(att, L * att_stride);
      parts.take(residual2, L * btc);
      parts.take(ln2, S * btc);
      parts.take(ln2_mean, S * bt);
      parts.take(ln2_rstd, S * bt);
      parts.take(fch, L * 4 * btc);
      parts.take(fch_gelu, G * 4 * btc);
      parts.take(residual3, layers * btc);
      parts.take(lnf, btc);
      parts.take(lnf_mean, bt);
      parts.take(lnf_rstd, bt);
      parts.take(proj, btc);
      parts.take(dresidual, btc);
      parts.take(dsmall, btc);
      parts.take(dlarge, 4 * btc);
      parts.take(datt, att_stride);
      parts.take(flash_lse, L * flash_rows);
      parts.take(flash_delta, flash_rows);
      parts.take(scratch, scratch_floats);
      parts.take(norm_discard, 2 * C);
      return parts.bytes();
    };
    bytes = carve(autotrain::gpu::SubBuffers(nullptr));
    if (!allocate) return;
    memory = autotrain::gpu::DeviceBuffer(bytes);
    carve(autotrain::gpu::SubBuffers(memory.data()));
  }
};

namespace {

// One layer's attention on the path the model chose: cuDNN's fused attention or our flash
// kernels (16-bit types only), else the path AUTOTRAIN_CUDA_ATTENTION selects.
template <typename F>
void layer_attention_forward(AttentionPath path, F* out, F* att, float* lse, const F* qkv, int B,
                             int T, int C, int NH, cudaStream_t stream) {
  if constexpr (sizeof(F) == 2) {
    if (path == AttentionPath::cudnn) {
      cudnn_attention_forward(out, lse, qkv, B, T, NH, NH, C / NH, stream);
      return;
    }
    if (path == AttentionPath::flash) {
      flash_attention_forward(out, lse, qkv, B, T, C, NH, stream);
      return;
    }
  }
  attention_forward(out, att, qkv, B, T, C, NH, stream);
}

template <typename F>
void layer_attention_backward(AttentionPath path, F* dqkv, F* datt, float* delta, const F* dout,
                              const F* qkv, const F* out, const F* att, const float* lse, int B,
                              int T, int C, int NH, cudaStream_t stream) {
  if constexpr (sizeof(F) == 2) {
    if (path == AttentionPath::cudnn) {
      cudnn_attention_backward(dqkv, delta, dout, qkv, out, lse, B, T, NH, NH, C / NH, stream);
      return;
    }
    if (path == AttentionPath::flash) {
      flash_attention_backward(dqkv, delta, dout, qkv, out, lse, B, T, C, NH, stream);
      return;
    }
  }
  attention_backward(dqkv, datt, dout, qkv, att, B, T, C, NH, stream);
}

}  // namespace

template <typename F>
DeviceGpt2<F>::DeviceGpt2(const ParamLayout& layout, int B, int T, cudaStream_t stream,
                          const BlasHandle& blas, Recompute recompute)
    : DeviceModelBase<F>(layout.config(), B, T, stream, blas, recompute, "block_size") {
  const ModelConfig& c = layout.config();
  AT_CHECK(c.n_head >= 1 && c.n_embd % c.n_head == 0 && c.head_size() <= kMaxAttentionHeadSize,
           "model: the CUDA attention kernels need n_embd (", c.n_embd, ") divisible by n_head (",
           c.n_head, ") and a head size of at most ", kMaxAttentionHeadSize);
  AT_CHECK(c.n_embd <= kernels::gpu::kLayerNormMaxChannels, "model: n_embd = ", c.n_embd,
           " is wider than the ", kernels::gpu::kLayerNormMaxChannels,
           " channels the CUDA LayerNorm holds in one warp's registers (GPT-2 XL has 1600)");
  std::vector<kernels::SdpaShape> shapes;
  if constexpr (sizeof(F) == 2) {
    shapes.push_back(kernels::sdpa_shape(std::is_same_v<F, __nv_bfloat16>, B, T, c.n_head, c.n_head,
                                         c.head_size(), {}));
  }
  this->choose_attention(flash_attention_supports(sizeof(F), c.n_embd, c.n_head), shapes);
  buffers_ = std::make_unique<Buffers>(layout, B, T, this->fused_attention(), recompute, true);
  const Buffers& b = *buffers_;
  this->family_ = {b.lnf, b.dsmall, b.head, b.memory.bytes()};
  attention_prepare(stream_);  // the attention's cuBLAS workspace, now rather than in step 1
}

template <typename F>
DeviceGpt2<F>::~DeviceGpt2() = default;

template <typename F>
std::size_t DeviceGpt2<F>::planned_activation_bytes(const ParamLayout& layout, int B, int T,
                                                    Recompute recompute) {
  const ModelConfig& c = layout.config();
  const bool fused =
      Base::plans_fused_attention(flash_attention_supports(sizeof(F), c.n_embd, c.n_head));
  return Base::driver_bytes(c, B, T) + Buffers(layout, B, T, fused, recompute, false).bytes;
}

template <typename F>
void DeviceGpt2<F>::embed_forward(const F* p) {
  const Buffers& b = *buffers_;
  encoder_forward(b.encoded, this->driver_.inputs, p + b.wte, p + b.wpe, B_, T_, b.config.n_embd,
                  stream_);
}

// Block l from its input (the embedding or block l - 1's residual3) to layer(l).residual3.
template <typename F>
void DeviceGpt2<F>::block_forward(int l, const F* p, BasicLinearAdapter<F>* adapter,
                                  EventClock& clock) {
  const Buffers& b = *buffers_;
  const F* residual = l == 0 ? b.encoded : b.layer(l - 1).residual3;
  const int B = B_, T = T_;
  const int C = b.config.n_embd, NH = b.config.n_head;
  const std::size_t bt = b.bt, btc = b.btc;
  const auto x = b.layer(l);
  // y += the adapter's term of the linear at `weight` (LoRA's dropout in training), if any.
  const auto adapt = [&](std::size_t weight, const F* in, F* y, int IC, int OC) {
    if (adapter) adapter->forward(ParamLayout::block_unit(l), weight, in, y, bt, IC, OC);
  };
  layernorm_forward(x.ln1, x.ln1_mean, x.ln1_rstd, residual, p + b.ln1w, p + b.ln1b, bt, C,
                    stream_);
  clock.lap(kNorm);
  matmul_forward(blas_, x.qkv, x.ln1, p + b.qkvw, p + b.qkvb, bt, C, 3 * C, stream_);
  adapt(b.qkvw, x.ln1, x.qkv, C, 3 * C);
  clock.lap(kMatmul);
  layer_attention_forward(attention_, x.atty, x.att, x.flash_lse, x.qkv, B, T, C, NH, stream_);
  clock.lap(kAttention);
  matmul_forward(blas_, b.proj, x.atty, p + b.attprojw, p + b.attprojb, bt, C, C, stream_);
  adapt(b.attprojw, x.atty, b.proj, C, C);
  clock.lap(kMatmul);
  residual_forward(x.residual2, residual, b.proj, btc, stream_);
  clock.lap(kResidual);
  layernorm_forward(x.ln2, x.ln2_mean, x.ln2_rstd, x.residual2, p + b.ln2w, p + b.ln2b, bt, C,
                    stream_);
  clock.lap(kNorm);
  if (adapter) {  // the adapter's term goes between c_fc and the GELU
    matmul_forward(blas_, x.fch, x.ln2, p + b.fcw, p + b.fcb, bt, C, 4 * C, stream_);
    adapt(b.fcw, x.ln2, x.fch, C, 4 * C);
    clock.lap(kMatmul);
    gelu_forward(x.fch_gelu, x.fch, 4 * btc, stream_);
    clock.lap(kActivation);
  } else {
    // c_fc and the GELU in one call where cuBLASLt fuses them (the profile's matmul row then
    // holds the GELU too).
    matmul_gelu_forward(blas_, x.fch_gelu, x.fch, x.ln2, p + b.fcw, p + b.fcb, bt, C, 4 * C,
                        stream_);
    clock.lap(kMatmul);
  }
  matmul_forward(blas_, b.proj, x.fch_gelu, p + b.fcprojw, p + b.fcprojb, bt, 4 * C, C, stream_);
  adapt(b.fcprojw, x.fch_gelu, b.proj, 4 * C, C);
  clock.lap(kMatmul);
  residual_forward(x.residual3, x.residual2, b.proj, btc, stream_);
  clock.lap(kResidual);
}

// Selective recompute: block l's LayerNorms from its input and its kept residual2, and the GELU
// from its kept fch where the forward's GELU kernel computed it (Buffers::gelu_kind).
template <typename F>
void DeviceGpt2<F>::block_recompute(int l, const F* p, EventClock& clock) {
  const Buffers& b = *buffers_;
  const F* residual = l == 0 ? b.encoded : b.layer(l - 1).residual3;
  const int C = b.config.n_embd;
  const auto x = b.layer(l);
  layernorm_forward(x.ln1, x.ln1_mean, x.ln1_rstd, residual, p + b.ln1w, p + b.ln1b, b.bt, C,
                    stream_);
  layernorm_forward(x.ln2, x.ln2_mean, x.ln2_rstd, x.residual2, p + b.ln2w, p + b.ln2b, b.bt, C,
                    stream_);
  clock.lap(kNorm);
  if (b.gelu_kind == Kept::cheap) {
    gelu_forward(x.fch_gelu, x.fch, 4 * b.btc, stream_);
    clock.lap(kActivation);
  }
}

template <typename F>
void DeviceGpt2<F>::final_norm_forward(const F* p) {
  const Buffers& b = *buffers_;
  const int L = b.config.n_layer;
  layernorm_forward(b.lnf, b.lnf_mean, b.lnf_rstd, b.layer(L - 1).residual3, p + b.lnfw, p + b.lnfb,
                    b.bt, b.config.n_embd, stream_);
}

template <typename F>
void DeviceGpt2<F>::final_norm_backward(const F* p, F* g) {
  const Buffers& b = *buffers_;
  const int C = b.config.n_embd, L = b.config.n_layer;
  F* dweight = g != nullptr ? g + b.lnfw : b.norm_discard;
  F* dbias = g != nullptr ? g + b.lnfb : b.norm_discard + C;
  AT_CUDA_CHECK(cudaMemsetAsync(b.dresidual, 0, b.btc * sizeof(F), stream_));
  layernorm_backward(b.dresidual, dweight, dbias, b.dsmall, b.layer(L - 1).residual3, p + b.lnfw,
                     b.lnf_mean, b.lnf_rstd, b.scratch, b.bt, C, stream_);
}

template <typename F>
void DeviceGpt2<F>::block_backward(int l, const F* p, F* g, BasicLinearAdapter<F>* adapter,
                                   EventClock& clock) {
  const Buffers& b = *buffers_;
  const int B = B_, T = T_;
  const int C = b.config.n_embd, NH = b.config.n_head;
  const std::size_t bt = b.bt, btc = b.btc;
  F* dres = b.dresidual;
  F* dsmall = b.dsmall;
  F* dlarge = b.dlarge;
  const auto x = b.layer(l);
  const F* residual = l == 0 ? b.encoded : b.layer(l - 1).residual3;
  const int unit = ParamLayout::block_unit(l);
  // dx += the adapter's term of the linear at `weight` (after the linear's own backward).
  const auto adapt = [&](std::size_t weight, const F* in, const F* dy, F* dx, int IC, int OC) {
    if (adapter) adapter->backward(unit, weight, in, dy, dx, bt, IC, OC);
  };

  // MLP branch: residual3 = residual2 + c_proj(gelu(c_fc(ln_2(residual2)))), dres = d residual3;
  // the GELU's backward is fused into c_proj's (the matmul row holds it) unless an adapter's
  // term goes between them.
  if (adapter) {
    matmul_backward(blas_, dlarge, g + b.fcprojw, g + b.fcprojb, dres, x.fch_gelu, p + b.fcprojw,
                    b.scratch, bt, 4 * C, C, stream_);
    adapt(b.fcprojw, x.fch_gelu, dres, dlarge, 4 * C, C);
    clock.lap(kMatmul);
    gelu_backward(dlarge, x.fch, dlarge, 4 * btc, stream_);
    clock.lap(kActivation);
  } else {
    matmul_backward(blas_, dlarge, g + b.fcprojw, g + b.fcprojb, dres, x.fch_gelu, p + b.fcprojw,
                    b.scratch, bt, 4 * C, C, stream_, x.fch);
    clock.lap(kMatmul);
  }
  matmul_backward(blas_, dsmall, g + b.fcw, g + b.fcb, dlarge, x.ln2, p + b.fcw, b.scratch, bt, C,
                  4 * C, stream_);
  adapt(b.fcw, x.ln2, dlarge, dsmall, C, 4 * C);
  clock.lap(kMatmul);
  layernorm_backward(dres, g + b.ln2w, g + b.ln2b, dsmall, x.residual2, p + b.ln2w, x.ln2_mean,
                     x.ln2_rstd, b.scratch, bt, C, stream_);
  clock.lap(kNorm);
  // Attention branch: residual2 = residual + c_proj(attn(c_attn(ln_1(residual)))),
  // dres = d residual2 now
  matmul_backward(blas_, dsmall, g + b.attprojw, g + b.attprojb, dres, x.atty, p + b.attprojw,
                  b.scratch, bt, C, C, stream_);
  adapt(b.attprojw, x.atty, dres, dsmall, C, C);
  clock.lap(kMatmul);
  layer_attention_backward(attention_, dlarge, b.datt, b.flash_delta, dsmall, x.qkv, x.atty, x.att,
                           x.flash_lse, B, T, C, NH, stream_);
  clock.lap(kAttention);
  matmul_backward(blas_, dsmall, g + b.qkvw, g + b.qkvb, dlarge, x.ln1, p + b.qkvw, b.scratch, bt,
                  C, 3 * C, stream_);
  adapt(b.qkvw, x.ln1, dlarge, dsmall, C, 3 * C);
  clock.lap(kMatmul);
  layernorm_backward(dres, g + b.ln1w, g + b.ln1b, dsmall, residual, p + b.ln1w, x.ln1_mean,
                     x.ln1_rstd, b.scratch, bt, C, stream_);
  clock.lap(kNorm);
}

template <typename F>
void DeviceGpt2<F>::embed_backward(F* g, const TokenRuns& runs) {
  const Buffers& b = *buffers_;
  encoder_backward(g + b.wte, g + b.wpe, b.dresidual, runs, B_, T_, b.config.n_embd, stream_);
}

template class DeviceGpt2<float>;
template class DeviceGpt2<__nv_bfloat16>;
template class DeviceGpt2<__half>;

}  // namespace autotrain::model::gpu
