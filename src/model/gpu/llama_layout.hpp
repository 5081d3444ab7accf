#pragma once
// What the Llama-style decoder's device model and decoder share: where each tensor sits in its
// unit (../llama_offsets.hpp, as the CPU model), and the rotary cos/sin tables, computed on the
// host as the CPU model's (../rope_frequencies.hpp) and copied to the device once. Host code.
#ifdef AUTOTRAIN_HAVE_CUDA
#include <cmath>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "../llama_offsets.hpp"
#include "../rope_frequencies.hpp"
#include "autotrain/core/gpu/check.hpp"
#include "autotrain/core/gpu/device.hpp"
#include "autotrain/kernels/attention.hpp"
#include "autotrain/kernels/rope.hpp"
#include "autotrain/model/param_layout.hpp"

namespace autotrain::model::gpu {

// Layer l's attention options (the CPU model's): Gemma's query scale and soft cap, and the
// layer's window where it is shorter than the `positions` served (else no window: the same
// result, and the fast paths stay open to models whose window the sequence never reaches).
inline kernels::AttentionOptions attention_options(const ModelConfig& c, int l, int positions) {
  const double scalar = c.query_pre_attn_scalar;
  const int window = c.window(l) < positions ? c.window(l) : 0;
  return {scalar > 0 ? 1 / std::sqrt(scalar) : 0.0, c.attn_softcap, window};
}

// The embeddings' scale as the model computes it: sqrt(hidden_size) in F (Gemma's normalizer is
// a tensor of the model's dtype), or 1.
template <typename F>
float embed_scale(const ModelConfig& c) {
  const auto scale = static_cast<float>(std::sqrt(double(c.n_embd)));
  return c.embed_scale ? static_cast<float>(static_cast<F>(scale)) : 1.0f;
}

// cos, sin: device arrays of [positions, rotary dimensions / 2] fp32 each; filled with the CPU
// model's tables (`local`: the sliding layers') on `stream`, waiting for the copies (the host
// tables are freed on return).
inline void upload_rope_tables(const ModelConfig& config, int positions, float* cos, float* sin,
                               cudaStream_t stream, bool local = false) {
  std::vector<float> host_cos, host_sin;
  rotary_tables(config, positions, host_cos, host_sin, local);
  const std::size_t n = host_cos.size();
  AT_CUDA_CHECK(
      cudaMemcpyAsync(cos, host_cos.data(), n * sizeof(float), cudaMemcpyHostToDevice, stream));
  AT_CUDA_CHECK(
      cudaMemcpyAsync(sin, host_sin.data(), n * sizeof(float), cudaMemcpyHostToDevice, stream));
  AT_CUDA_CHECK(cudaStreamSynchronize(stream));
}

}  // namespace autotrain::model::gpu
#endif  // AUTOTRAIN_HAVE_CUDA
