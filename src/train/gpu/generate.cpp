// Generation on the GPU (train/next_token_logits.hpp): the layout's family's device decoder
// (model/gpu/causal_lm.hpp: DeviceGpt2Decoder or DeviceLlamaDecoder) over the exported
// parameters in the compute precision, with a key/value cache as on the CPU: a restart
// feeds the whole window (feed_tokens: several rows a step), then each call one token. The
// parameters stay put, so each one-token step is a CUDA graph's launch (DecodeLaunch::graph). Host
// code (a .cpp: the headers need C++20).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <type_traits>
#include <vector>

#include "../next_token_logits.hpp"
#include "autotrain/core/dtype.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/gpu/check.hpp"
#include "autotrain/core/gpu/device.hpp"
#include "autotrain/kernels/gpu/matmul.hpp"
#include "autotrain/model/gpu/causal_lm.hpp"

namespace autotrain::train {
namespace {

namespace kg = autotrain::kernels::gpu;

constexpr int kGenerateDevice = 0;  // the first visible GPU (CUDA_VISIBLE_DEVICES picks it)

// Selects the device for this thread before any other CUDA object of the generator exists.
struct DeviceBinding {
  DeviceBinding() {
    AT_CHECK(autotrain::gpu::device_count() > 0, "generate: --device cuda, but no GPU is visible");
    AT_CUDA_CHECK(cudaSetDevice(kGenerateDevice));
  }
};

// The flat parameters (padded layout) in F on the device.
template <typename F>
autotrain::gpu::DeviceBuffer upload_params(const std::vector<float>& params) {
  autotrain::gpu::DeviceBuffer buffer(params.size() * sizeof(F));
  if constexpr (std::is_same_v<F, float>) {
    buffer.copy_from_host(params.data(), buffer.bytes());
  } else {
    std::vector<std::uint16_t> bits(params.size());
    for (std::size_t i = 0; i < params.size(); ++i) {
      bits[i] =
          std::is_same_v<F, __nv_bfloat16> ? float_to_bf16(params[i]) : float_to_fp16(params[i]);
    }
    buffer.copy_from_host(bits.data(), buffer.bytes());
  }
  return buffer;
}

// The cache holds the longest window the generation reaches.
template <typename F>
class GpuNextTokenLogits final : public NextTokenLogits {
 public:
  GpuNextTokenLogits(const LoadedModel& loaded, int window)
      : params_(upload_params<F>(loaded.params)),
        access_(*loaded.layout, params_.as<F>(), nullptr),
        decoder_(model::gpu::make_device_decoder<F>(*loaded.layout, window, stream_.get(), blas_,
                                                    model::gpu::DecodeLaunch::graph)),
        logits_(static_cast<std::size_t>(loaded.layout->config().vocab_size)) {}

  std::span<const float> logits(std::span<const std::int32_t> window, bool restart) override {
    AT_CHECK(!window.empty(), "generate: an empty window");
    if (restart) {
      decoder_->reset();
      decoder_->feed_tokens(access_, window, logits_);
    } else {
      decoder_->feed_token(access_, window.back(), logits_);
    }
    return logits_;
  }

 private:
  DeviceBinding binding_;  // first: every member below lives on this device
  autotrain::gpu::Stream stream_;
  kg::BlasHandle blas_;
  autotrain::gpu::DeviceBuffer params_;
  model::BasicFlatUnitAccess<F> access_;
  std::unique_ptr<model::gpu::DeviceDecoder<F>> decoder_;
  std::vector<float> logits_;  // [V]
};

}  // namespace

std::string gpu_generate_device_name() {
  cudaDeviceProp properties{};
  AT_CUDA_CHECK(cudaGetDeviceProperties(&properties, kGenerateDevice));
  return cat("cuda:", kGenerateDevice, " (", properties.name, ")");
}

std::unique_ptr<NextTokenLogits> make_gpu_next_token_logits(const LoadedModel& loaded,
                                                            Precision precision, int window) {
  switch (precision) {
    case Precision::bf16:
      return std::make_unique<GpuNextTokenLogits<__nv_bfloat16>>(loaded, window);
    case Precision::fp16:
      return std::make_unique<GpuNextTokenLogits<__half>>(loaded, window);
    default:
      return std::make_unique<GpuNextTokenLogits<float>>(loaded, window);
  }
}

}  // namespace autotrain::train
