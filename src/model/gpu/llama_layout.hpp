#pragma once
// What the Llama family's device model and decoder share: where each tensor sits in its unit
// (the CPU model's BasicLlama<F>::Offsets, src/model/llama.cpp, for the same ParamLayout), and
// the rotary cos/sin tables, computed on the host by the CPU kernel from the CPU model's inverse
// frequencies (../rope_frequencies.hpp) and copied to the device once. Host code.
#ifdef AUTOTRAIN_HAVE_CUDA
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "../rope_frequencies.hpp"
#include "autotrain/core/gpu/check.hpp"
#include "autotrain/core/gpu/device.hpp"
#include "autotrain/kernels/rope.hpp"
#include "autotrain/model/param_layout.hpp"

namespace autotrain::model::gpu {

// Element offsets inside a unit; the block tensors' are layer 0's (every block unit has the
// same layout). kNone marks a tensor the model does not have (a bias, q/k norms).
struct LlamaOffsets {
  static constexpr std::size_t kNone = ~std::size_t{0};
  std::size_t embed, ln1w, qkvw, qkvb, qnorm, knorm, ow, ob, ln2w, guw, gub, downw, downb;
  std::size_t normw, head;  // head: in unit 0 (embed) when tied, else in unit L + 1

  explicit LlamaOffsets(const ParamLayout& layout) {
    const auto at = [&](std::string_view name) {
      return layout.offset_in_unit(layout.tensor(name));
    };
    const ModelConfig& c = layout.config();
    const std::string p = "model.layers.0.";
    embed = at("model.embed_tokens.weight");
    ln1w = at(p + "input_layernorm.weight");
    qkvw = at(p + "self_attn.q_proj.weight");  // q, k, v one after the other: one [QKV, C]
    qkvb = c.qkv_bias ? at(p + "self_attn.q_proj.bias") : kNone;
    qnorm = c.qk_norm ? at(p + "self_attn.q_norm.weight") : kNone;
    knorm = c.qk_norm ? at(p + "self_attn.k_norm.weight") : kNone;
    ow = at(p + "self_attn.o_proj.weight");
    ob = c.o_bias ? at(p + "self_attn.o_proj.bias") : kNone;
    ln2w = at(p + "post_attention_layernorm.weight");
    guw = at(p + "mlp.gate_proj.weight");  // gate, up: one [2I, C]
    gub = c.mlp_bias ? at(p + "mlp.gate_proj.bias") : kNone;
    downw = at(p + "mlp.down_proj.weight");
    downb = c.mlp_bias ? at(p + "mlp.down_proj.bias") : kNone;
    normw = at("model.norm.weight");
    head = c.tie_word_embeddings ? embed : at("lm_head.weight");
  }
};

// p + offset, or null for a tensor the model does not have (the kernels take a null bias).
template <typename T>
T* tensor_at(T* p, std::size_t offset) {
  return offset == LlamaOffsets::kNone ? nullptr : p + offset;
}

// cos, sin: device arrays of [positions, head_dim / 2] fp32 each; filled with the CPU model's
// tables on `stream`, waiting for the copies (the host tables are freed on return).
inline void upload_rope_tables(const ModelConfig& config, int positions, float* cos, float* sin,
                               cudaStream_t stream) {
  const std::vector<double> inv_freq = inverse_frequencies(config);
  const int half = config.head_size() / 2;
  const std::size_t n = static_cast<std::size_t>(positions) * static_cast<std::size_t>(half);
  std::vector<float> host_cos(n), host_sin(n);
  kernels::rope_tables(host_cos.data(), host_sin.data(), inv_freq.data(), positions, half);
  AT_CUDA_CHECK(
      cudaMemcpyAsync(cos, host_cos.data(), n * sizeof(float), cudaMemcpyHostToDevice, stream));
  AT_CUDA_CHECK(
      cudaMemcpyAsync(sin, host_sin.data(), n * sizeof(float), cudaMemcpyHostToDevice, stream));
  AT_CUDA_CHECK(cudaStreamSynchronize(stream));
}

}  // namespace autotrain::model::gpu
#endif  // AUTOTRAIN_HAVE_CUDA
