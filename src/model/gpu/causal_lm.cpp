// The device model and decoder of the layout's family (model/gpu/causal_lm.hpp): the one place
// on the device path that names the families, as make_causal_lm is on the CPU's.
#include "autotrain/model/gpu/causal_lm.hpp"

#include "../check_tokens.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/model/gpu/decoder.hpp"
#include "autotrain/model/gpu/gpt2.hpp"
#include "autotrain/model/gpu/llama.hpp"
#include "autotrain/model/gpu/llama_decoder.hpp"

namespace autotrain::model::gpu {

template <typename F>
std::unique_ptr<DeviceCausalLM<F>> make_device_causal_lm(const ParamLayout& layout, int B, int T,
                                                         cudaStream_t stream,
                                                         const kernels::gpu::BlasHandle& blas,
                                                         Recompute recompute) {
  if (layout.config().family == Family::llama) {
    return std::make_unique<DeviceLlama<F>>(layout, B, T, stream, blas, recompute);
  }
  return std::make_unique<DeviceGpt2<F>>(layout, B, T, stream, blas, recompute);
}

template <typename F>
std::size_t planned_activation_bytes(const ParamLayout& layout, int B, int T, Recompute recompute) {
  if (layout.config().family == Family::llama) {
    return DeviceLlama<F>::planned_activation_bytes(layout, B, T, recompute);
  }
  return DeviceGpt2<F>::planned_activation_bytes(layout, B, T, recompute);
}

template <typename F>
std::unique_ptr<DeviceDecoder<F>> make_device_decoder(const ParamLayout& layout, int positions,
                                                      cudaStream_t stream,
                                                      const kernels::gpu::BlasHandle& blas,
                                                      DecodeLaunch launch) {
  AT_CHECK(!layout.config().score_head, kScoreGeneration);
  if (layout.config().family == Family::llama) {
    return std::make_unique<DeviceLlamaDecoder<F>>(layout, positions, stream, blas, launch);
  }
  return std::make_unique<DeviceGpt2Decoder<F>>(layout, positions, stream, blas, launch);
}

template std::size_t planned_activation_bytes<float>(const ParamLayout&, int, int, Recompute);
template std::size_t planned_activation_bytes<__nv_bfloat16>(const ParamLayout&, int, int,
                                                             Recompute);
template std::size_t planned_activation_bytes<__half>(const ParamLayout&, int, int, Recompute);
template std::unique_ptr<DeviceCausalLM<float>> make_device_causal_lm(
    const ParamLayout&, int, int, cudaStream_t, const kernels::gpu::BlasHandle&, Recompute);
template std::unique_ptr<DeviceDecoder<float>> make_device_decoder(const ParamLayout&, int,
                                                                   cudaStream_t,
                                                                   const kernels::gpu::BlasHandle&,
                                                                   DecodeLaunch);
template std::unique_ptr<DeviceCausalLM<__nv_bfloat16>> make_device_causal_lm(
    const ParamLayout&, int, int, cudaStream_t, const kernels::gpu::BlasHandle&, Recompute);
template std::unique_ptr<DeviceDecoder<__nv_bfloat16>> make_device_decoder(
    const ParamLayout&, int, cudaStream_t, const kernels::gpu::BlasHandle&, DecodeLaunch);
template std::unique_ptr<DeviceCausalLM<__half>> make_device_causal_lm(
    const ParamLayout&, int, int, cudaStream_t, const kernels::gpu::BlasHandle&, Recompute);
template std::unique_ptr<DeviceDecoder<__half>> make_device_decoder(const ParamLayout&, int,
                                                                    cudaStream_t,
                                                                    const kernels::gpu::BlasHandle&,
                                                                    DecodeLaunch);

}  // namespace autotrain::model::gpu
