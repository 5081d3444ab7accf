#pragma once
// 4- and 8-bit weights dequantized on the device (mirrors kernels/quantize.hpp, whose formats and
// rounding it follows: each value level · absmax (or q · (absmax / 127)) in fp32, then rounded
// once to G; the double-quantized absmax map · absmax2 + offset in two roundings, never fused).
// Element types: float, __nv_bfloat16, __half.
#ifdef AUTOTRAIN_HAVE_CUDA
#include <cstddef>

#include "autotrain/core/gpu/device.hpp"
#include "autotrain/kernels/quantize.hpp"

namespace autotrain::kernels::gpu {

// out = the tensor whose record (device memory, 4-byte aligned) `tensor` describes, dequantized.
// `tables` (device memory): the 16 NF4 levels, then the 256 entries of the signed dynamic map.
template <typename G>
void dequantize(const QuantizedTensor& tensor, const std::byte* record, const float* tables, G* out,
                cudaStream_t stream);

}  // namespace autotrain::kernels::gpu
#endif  // AUTOTRAIN_HAVE_CUDA
