// Dequantization of 4- and 8-bit weights on the device (kernels/gpu/quantize.hpp).
#include <cstdint>

#include "autotrain/kernels/gpu/quantize.hpp"
#include "common.cuh"

namespace autotrain::kernels::gpu {
namespace {

// A thread a byte of codes (grid-stride): two elements of one NF4 block (64 elements: even).
template <typename G>
__global__ void nf4_kernel(G* out, const std::uint8_t* packed, const float* absmax,
                           const std::uint8_t* absmax_codes, const float* absmax2,
                           const float* tables, std::size_t n) {
  const std::size_t blocks = (n + kNf4Block - 1) / kNf4Block;
  const float offset =
      absmax_codes != nullptr ? absmax2[(blocks + kAbsmaxBlock - 1) / kAbsmaxBlock] : 0.0f;
  for (std::size_t byte = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; byte * 2 < n;
       byte += std::size_t{gridDim.x} * blockDim.x) {
    const std::size_t block = byte * 2 / kNf4Block;
    float scale;
    if (absmax_codes != nullptr) {  // double quantization: map · absmax2 + offset, two roundings
      scale = __fadd_rn(__fmul_rn(tables[16 + absmax_codes[block]], absmax2[block / kAbsmaxBlock]),
                        offset);
    } else {
      scale = absmax[block];
    }
    const std::uint8_t codes = packed[byte];
    out[byte * 2] = from_float<G>(__fmul_rn(tables[codes >> 4], scale));
    if (byte * 2 + 1 < n) {
      out[byte * 2 + 1] = from_float<G>(__fmul_rn(tables[codes & 0xF], scale));
    }
  }
}

// A thread an element (grid-stride): q · (absmax / 127) of its row.
template <typename G>
__global__ void int8_kernel(G* out, const std::int8_t* codes, const float* absmax, std::size_t cols,
                            std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    const float scale = __fdiv_rn(absmax[i / cols], 127.0f);
    out[i] = from_float<G>(__fmul_rn(static_cast<float>(codes[i]), scale));
  }
}

}  // namespace

template <typename G>
void dequantize(const QuantizedTensor& tensor, const std::byte* record, const float* tables, G* out,
                cudaStream_t stream) {
  const std::size_t n = tensor.numel();
  if (n == 0) return;
  if (tensor.kind == QuantKind::int8) {
    int8_kernel<<<grid_for(n), kBlockThreads, 0, stream>>>(
        out, reinterpret_cast<const std::int8_t*>(record),
        reinterpret_cast<const float*>(record + tensor.scales), tensor.cols, n);
  } else {
    const auto* scales = reinterpret_cast<const float*>(record + tensor.scales);
    nf4_kernel<<<grid_for((n + 1) / 2), kBlockThreads, 0, stream>>>(
        out, reinterpret_cast<const std::uint8_t*>(record), tensor.double_quant ? nullptr : scales,
        tensor.double_quant ? reinterpret_cast<const std::uint8_t*>(record + tensor.scales)
                            : nullptr,
        tensor.double_quant ? reinterpret_cast<const float*>(record + tensor.scales2) : nullptr,
        tables, n);
  }
  AT_CUDA_CHECK_LAUNCH();
}

#define AT_DEQUANTIZE(G)                                                                  \
  template void dequantize<G>(const QuantizedTensor&, const std::byte*, const float*, G*, \
                              cudaStream_t);
AT_GPU_INSTANTIATE(AT_DEQUANTIZE)

}  // namespace autotrain::kernels::gpu
