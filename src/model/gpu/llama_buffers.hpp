#pragma once
// Every device buffer of DeviceLlama (model/gpu/llama.hpp), carved from one allocation made at
// construction, with the shape and the tensor offsets (llama_layout.hpp) the passes read. Host
// code; included by src/model/gpu/llama.cpp only.
// Shapes: B batch, T positions, C hidden, NH heads, NKV key/value heads, D head_dim, Q = NH·D,
// KV = NKV·D, QKV = Q + 2·KV, I intermediate, L layers, Vp padded vocabulary. Per-layer
// activations are [L, ...] with a stride of one layer's tensor, or [1, ...] for those `mode`
// recomputes (model/recompute.hpp: the cheap ln1, ln2, their rstd and act under selective, every
// one but the stream under full); the residual stream keeps L + 1 slots. RMSNorm statistics,
// the losses, the rotary tables and flash attention's row statistics are fp32 whatever F is
// (the kernels' contract).
#ifdef AUTOTRAIN_HAVE_CUDA
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "autotrain/core/gpu/device.hpp"
#include "autotrain/kernels/gpu/matmul.hpp"
#include "autotrain/kernels/gpu/rmsnorm.hpp"
#include "autotrain/model/gpu/llama.hpp"
#include "llama_layout.hpp"

namespace autotrain::model::gpu {

template <typename F>
struct DeviceLlama<F>::Buffers : LlamaOffsets {
  ModelConfig config;
  Recompute mode;
  std::size_t bt;                   // B·T: stride of per-layer [B, T] statistics
  std::size_t att_stride;           // B·NH·T·T (0 with a fused attention: flash or cuDNN)
  std::size_t rows;                 // B·NH·T (a fused attention's row statistics; 0 without)
  std::size_t C, Q, KV, QKV, I, H;  // H = NH + NKV: the q/k heads normed per row (qk_norm)

  std::size_t bytes;  // of the one allocation
  autotrain::gpu::DeviceBuffer memory;
  F* residual;                 // [L + 1, B, T, C] the stream into each block, then the last output
  F* ln1;                      // [L, B, T, C]
  float* rstd1;                // [L, B, T]
  F* qkv_pre;                  // [L, B, T, QKV] before the q/k norm (qk_norm only)
  float* qk_rstd;              // [L, B, T, H] q heads' then k heads' (qk_norm only)
  F* qkv;                      // [L, B, T, QKV] attention's input (normed, rotated)
  F* att;                      // [L, B, NH, T, T] (not with a fused attention)
  float* flash_lse;            // [L, B, NH, T] (a fused attention only)
  F* atty;                     // [L, B, T, Q]
  F* attn_out;                 // [L, B, T, C] o_proj's output (sandwich_norms only)
  float* rstd_attn;            // [L, B, T] (sandwich_norms only)
  F* mid;                      // [L, B, T, C] the stream after attention
  F* ln2;                      // [L, B, T, C]
  float* rstd2;                // [L, B, T]
  F* gate_up;                  // [L, B, T, 2I]
  F* act;                      // [L, B, T, I]
  F* mlp_out;                  // [L, B, T, C] down_proj's output (sandwich_norms only)
  float* rstd_mlp;             // [L, B, T] (sandwich_norms only)
  F* lnf;                      // [B, T, C]
  float* rstdf;                // [B, T]
  F* proj;                     // [B, T, C] a branch's output as it joins the stream
  float *rope_cos, *rope_sin;  // [T, R/2] filled once at construction
  float *local_cos, *local_sin;  // the sliding layers' (rope_local_theta), or null
  // [max(T·C, D)] zeros: the position table of the embedding lookup (encoder_forward adds one;
  // the Llama family has none) and the zero weight that clears the q/k columns of dqkv_pre.
  F* zeros;
  // Activation gradients, shared by all layers (each is overwritten before it is read):
  F* dresidual;        // [B, T, C] the residual stream, accumulated
  F* dsmall;           // [B, T, max(C, Q)] d(norm output), d(attention output); the dwpe sink
  F* dwide;            // [B, T, max(2I, QKV)] d(gate|up), d(qkv)
  F* dmid;             // [B, T, max(I, QKV)] d(swiglu output), d(qkv before the q/k norm)
  F* datt;             // [B, NH, T, T] attention_backward's d(scores) (not with a fused attention)
  float* flash_delta;  // [B, NH, T] (a fused attention only)
  F* dpost;            // [B, T, C] d(a branch's output) under sandwich norms
  float* scratch;      // RMSNorm and bias-gradient partial sums; the q/k clearing's statistics
  F* norm_discard;     // [C] a frozen final norm's weight gradient (LoRA), never read

  // Layer l's slice of the per-layer tensors: what its forward writes and its backward reads.
  struct Layer {
    const F* in;  // the stream into block l
    F* out;       // the stream out of it
    F* ln1;
    float* rstd1;
    F* qkv_pre;
    float* qk_rstd;
    F *qkv, *att;
    float* flash_lse;
    F *atty, *mid, *ln2;
    float* rstd2;
    F *gate_up, *act;
    F* attn_out;  // sandwich_norms only (else null), as the three below
    float* rstd_attn;
    F* mlp_out;
    float* rstd_mlp;
  };
  Layer layer(int l) const {
    const auto i = static_cast<std::size_t>(l);
    const std::size_t s = slot_of(Kept::costly, mode, l);
    const std::size_t n = slot_of(Kept::cheap, mode, l);  // the norms and the gated unit
    return {residual + i * bt * C,
            residual + (i + 1) * bt * C,
            ln1 + n * bt * C,
            rstd1 + n * bt,
            qkv_pre == nullptr ? nullptr : qkv_pre + s * bt * QKV,
            qk_rstd == nullptr ? nullptr : qk_rstd + s * bt * H,
            qkv + s * bt * QKV,
            att == nullptr ? nullptr : att + s * att_stride,
            flash_lse == nullptr ? nullptr : flash_lse + s * rows,
            atty + s * bt * Q,
            mid + s * bt * C,
            ln2 + n * bt * C,
            rstd2 + n * bt,
            gate_up + s * bt * 2 * I,
            act + n * bt * I,
            attn_out == nullptr ? nullptr : attn_out + s * bt * C,
            rstd_attn == nullptr ? nullptr : rstd_attn + s * bt,
            mlp_out == nullptr ? nullptr : mlp_out + s * bt * C,
            rstd_mlp == nullptr ? nullptr : rstd_mlp + s * bt};
  }

  // Sizes the buffers (bytes); with a stream, allocates them, fills the zeros and the rotary
  // tables on it and waits for it (without one nothing is allocated: the memory plan's figure).
  Buffers(const ParamLayout& layout, int B, int T, bool flash, Recompute mode_,
          std::optional<cudaStream_t> stream)
      : LlamaOffsets(layout), config(layout.config()), mode(mode_) {
    const ModelConfig& c = config;
    const auto layers = static_cast<std::size_t>(c.n_layer);
    const std::size_t S = slots_of(Kept::cheap, mode, layers);   // slots of the cheap tensors
    const std::size_t L = slots_of(Kept::costly, mode, layers);  // of the costly ones
    const auto uT = static_cast<std::size_t>(T);
    const auto D = static_cast<std::size_t>(c.head_size());
    const auto R = static_cast<std::size_t>(c.rotary_size());
    bt = static_cast<std::size_t>(B) * uT;
    C = static_cast<std::size_t>(c.n_embd);
    Q = static_cast<std::size_t>(c.q_size());
    KV = static_cast<std::size_t>(c.kv_size());
    QKV = static_cast<std::size_t>(c.qkv_size());
    I = static_cast<std::size_t>(c.mlp_size());
    H = static_cast<std::size_t>(c.n_head + c.kv_heads());
    const std::size_t heads_rows = static_cast<std::size_t>(B) * c.n_head * uT;
    att_stride = flash ? 0 : heads_rows * uT;
    rows = flash ? heads_rows : 0;
    const std::size_t qk = c.qk_norm ? 1 : 0;
    const std::size_t sandwich = c.sandwich_norms ? 1 : 0;
    const std::size_t local = c.rope_local_theta > 0 ? 1 : 0;
    const int widest_out = std::max({c.qkv_size(), 2 * c.mlp_size(), c.n_embd});
    const std::size_t scratch_floats =
        std::max({kernels::gpu::rmsnorm_backward_scratch_floats(bt, 1, c.n_embd),
                  kernels::gpu::rmsnorm_backward_scratch_floats(bt, c.n_head, c.head_size()),
                  kernels::gpu::rmsnorm_backward_scratch_floats(bt, c.kv_heads(), c.head_size()),
                  kernels::gpu::matmul_backward_scratch_floats(bt, widest_out), qk * bt * H});

    auto carve = [&](autotrain::gpu::SubBuffers parts) {
      parts.take(residual, (layers + 1) * bt * C);
      parts.take(ln1, S * bt * C);
      parts.take(rstd1, S * bt);
      parts.take(qkv_pre, qk * L * bt * QKV);
      parts.take(qk_rstd, qk * L * bt * H);
      parts.take(qkv, L * bt * QKV);
      parts.take(att, L * att_stride);
      parts.take(flash_lse, L * rows);
      parts.take(atty, L * bt * Q);
      parts.take(attn_out, sandwich * L * bt * C);
      parts.take(rstd_attn, sandwich * L * bt);
      parts.take(mid, L * bt * C);
      parts.take(ln2, S * bt * C);
      parts.take(rstd2, S * bt);
      parts.take(gate_up, L * bt * 2 * I);
      parts.take(act, S * bt * I);
      parts.take(mlp_out, sandwich * L * bt * C);
      parts.take(rstd_mlp, sandwich * L * bt);
      parts.take(lnf, bt * C);
      parts.take(rstdf, bt);
      parts.take(proj, bt * C);
      parts.take(rope_cos, uT * R / 2);
      parts.take(rope_sin, uT * R / 2);
      parts.take(local_cos, local * uT * R / 2);
      parts.take(local_sin, local * uT * R / 2);
      parts.take(zeros, std::max(uT * C, D));
      parts.take(dresidual, bt * C);
      parts.take(dsmall, bt * std::max(C, Q));
      parts.take(dwide, bt * std::max(2 * I, QKV));
      parts.take(dmid, bt * std::max(I, QKV));
      parts.take(datt, att_stride);
      parts.take(flash_delta, rows);
      parts.take(dpost, sandwich * bt * C);
      parts.take(scratch, scratch_floats);
      parts.take(norm_discard, C);
      return parts.bytes();
    };
    bytes = carve(autotrain::gpu::SubBuffers(nullptr));
    if (!stream) return;
    memory = autotrain::gpu::DeviceBuffer(bytes);
    carve(autotrain::gpu::SubBuffers(memory.data()));
    // Tensors this model does not have point nowhere (a stray use faults, on the emulator too).
    if (!c.qk_norm) {
      qkv_pre = nullptr;
      qk_rstd = nullptr;
    }
    if (!c.sandwich_norms) {
      attn_out = mlp_out = dpost = nullptr;
      rstd_attn = rstd_mlp = nullptr;
    }
    if (flash) {
      att = nullptr;
      datt = nullptr;
    } else {
      flash_lse = nullptr;
      flash_delta = nullptr;
    }
    AT_CUDA_CHECK(cudaMemsetAsync(zeros, 0, std::max(uT * C, D) * sizeof(F), *stream));
    upload_rope_tables(c, T, rope_cos, rope_sin, *stream);
    if (local) {
      upload_rope_tables(c, T, local_cos, local_sin, *stream, true);
    } else {
      local_cos = local_sin = nullptr;
    }
  }
};

}  // namespace autotrain::model::gpu
#endif  // AUTOTRAIN_HAVE_CUDA
