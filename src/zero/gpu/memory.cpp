// The device engine's memory policy (gpu/memory.hpp), and the gradient reducers of
// zero/gradients.hpp built over it for each compute type. Host code: the kernels it queues live
// in kernels/gpu/vector.
#include "memory.hpp"

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "../frozen_params_impl.hpp"
#include "../gradients_impl.hpp"
#include "../quantized_frozen_impl.hpp"
#include "autotrain/core/dtype.hpp"
#include "autotrain/core/gpu/check.hpp"
#include "autotrain/kernels/gpu/quantize.hpp"
#include "autotrain/kernels/gpu/vector.hpp"

namespace autotrain::zero {
namespace gpu {

template <typename F>
auto DeviceMemory<F>::allocate(std::size_t elements) const -> Buffer {
  Buffer buffer(elements * sizeof(F));
  buffer.zero(stream);
  return buffer;
}

template <typename F>
void DeviceMemory<F>::zero(F* data, std::size_t count) const {
  if (count == 0) return;  // a unit without elements (LoRA's first and last)
  AT_CUDA_CHECK(cudaMemsetAsync(data, 0, count * sizeof(F), stream));
}

template <typename F>
void DeviceMemory<F>::add_into(F* into, const F* part, std::size_t count) const {
  kernels::gpu::add_into(into, part, count, stream);
}

template <typename F>
void DeviceMemory<F>::widen(float* into, const F* values, std::size_t count) const {
  kernels::gpu::cast_to_float(into, values, count, stream);
}

template <typename F>
void DeviceMemory<F>::add_widened(float* into, const F* values, std::size_t count) const {
  kernels::gpu::accumulate_into(into, values, count, stream);
}

template <typename F>
void DeviceMemory<F>::upload(F* into, const float* values, std::size_t count) const {
  if (count == 0) return;
  autotrain::gpu::DeviceBuffer floats(count * sizeof(float));
  AT_CUDA_CHECK(cudaMemcpyAsync(floats.data(), values, count * sizeof(float),
                                cudaMemcpyHostToDevice, stream));
  kernels::gpu::cast_from_float(into, floats.as<float>(), count, stream);
  AT_CUDA_CHECK(cudaStreamSynchronize(stream));
}

template <typename F>
void DeviceMemory<F>::upload_bytes(void* into, const void* bytes, std::size_t count) const {
  AT_CUDA_CHECK(cudaStreamSynchronize(stream));
  AT_CUDA_CHECK(cudaMemcpy(into, bytes, count, cudaMemcpyHostToDevice));
}

template <typename F>
void DeviceMemory<F>::dequantize(const kernels::QuantizedTensor& record, const std::byte* bytes,
                                 const float* tables, F* into) const {
  kernels::gpu::dequantize(record, bytes, tables, into, stream);
}

template <typename F>
void DeviceMemory<F>::upload_host(F* into, const float* values, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) {
    if constexpr (std::is_same_v<F, float>) {
      into[i] = values[i];
    } else {
      // Nearest even, as cast_from_float on the device.
      const std::uint16_t bits =
          std::is_same_v<F, __nv_bfloat16> ? float_to_bf16(values[i]) : float_to_fp16(values[i]);
      std::memcpy(static_cast<void*>(&into[i]), &bits, sizeof bits);
    }
  }
}

template struct DeviceMemory<float>;
template struct DeviceMemory<__nv_bfloat16>;
template struct DeviceMemory<__half>;

}  // namespace gpu

// An fp32 model's, and a 16-bit model's widened to fp32.
template class ReplicatedGradients<gpu::DeviceMemory<float>>;
template class PartitionedGradients<gpu::DeviceMemory<float>>;
template class ReplicatedGradients<gpu::DeviceMemory<__nv_bfloat16>>;
template class PartitionedGradients<gpu::DeviceMemory<__nv_bfloat16>>;
template class ReplicatedGradients<gpu::DeviceMemory<__half>>;
template class PartitionedGradients<gpu::DeviceMemory<__half>>;

// LoRA's frozen base in the compute type.
template class BasicFrozenParams<gpu::DeviceMemory<float>>;
template class BasicFrozenParams<gpu::DeviceMemory<__nv_bfloat16>>;
template class BasicFrozenParams<gpu::DeviceMemory<__half>>;
template class BasicQuantizedFrozen<gpu::DeviceMemory<float>>;
template class BasicQuantizedFrozen<gpu::DeviceMemory<__nv_bfloat16>>;
template class BasicQuantizedFrozen<gpu::DeviceMemory<__half>>;

}  // namespace autotrain::zero
