#pragma once
// What the Llama-style decoder's device model and decoder share: where each tensor sits in its
// unit (../llama_offsets.hpp, as the CPU model), and the rotary cos/sin tables, computed on the
// host as the CPU model's (../rope_frequencies.hpp) and copied to the device once. Host code.
#ifdef AUTOTRAIN_HAVE_CUDA
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "../llama_offsets.hpp"
#include "../rope_frequencies.hpp"
#include "autotrain/core/gpu/check.hpp"
#include "autotrain/core/gpu/device.hpp"
#include "autotrain/kernels/rope.hpp"
#include "autotrain/model/param_layout.hpp"

namespace autotrain::model::gpu {

// What the device decoder does not run yet, refused by name: Gemma's changes to the block, and
// attention over a window shorter than the `positions` it must serve.
inline void check_device_decoder(const ModelConfig& c, int positions) {
  AT_CHECK(!c.norm_offset && !c.embed_scale && !c.sandwich_norms && c.attn_softcap == 0 &&
               c.final_softcap == 0 && c.query_pre_attn_scalar == 0 &&
               c.gate == GateActivation::silu && c.rope_local_theta == 0,
           "model: ", c.architecture,
           " runs on the CPU only for now: the device decoder lacks Gemma's norms, soft caps, "
           "query scale and GeGLU (set device: cpu)");
  AT_CHECK(c.sliding_window == 0 || positions <= c.sliding_window, "model: sequence length ",
           positions, " exceeds the model's sliding_window of ", c.sliding_window,
           ": the device kernels do not attend over a sliding window yet; use block_size <= ",
           c.sliding_window, " or the CPU");
}

// cos, sin: device arrays of [positions, rotary dimensions / 2] fp32 each; filled with the CPU
// model's tables on `stream`, waiting for the copies (the host tables are freed on return).
inline void upload_rope_tables(const ModelConfig& config, int positions, float* cos, float* sin,
                               cudaStream_t stream) {
  std::vector<float> host_cos, host_sin;
  rotary_tables(config, positions, host_cos, host_sin);
  const std::size_t n = host_cos.size();
  AT_CUDA_CHECK(
      cudaMemcpyAsync(cos, host_cos.data(), n * sizeof(float), cudaMemcpyHostToDevice, stream));
  AT_CUDA_CHECK(
      cudaMemcpyAsync(sin, host_sin.data(), n * sizeof(float), cudaMemcpyHostToDevice, stream));
  AT_CUDA_CHECK(cudaStreamSynchronize(stream));
}

}  // namespace autotrain::model::gpu
#endif  // AUTOTRAIN_HAVE_CUDA
