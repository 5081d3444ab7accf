#pragma once
// Weights stored in 4 or 8 bits (QLoRA's frozen base, docs/training.md "QLoRA"), a tensor at a
// time, as bitsandbytes defines its formats:
//   nf4   blocks of 64 consecutive elements of the flattened tensor (the last one may be short),
//         one fp32 absmax per block; each element the index of the nearest of the 16 NormalFloat
//         levels (kNf4Levels) to x · (1 / absmax), two to a byte, the first in the high nibble.
//         Dequantized: level · absmax.
//   nf4 with double quantization (bnb_4bit_use_double_quant): the absmax values themselves in 8
//         bits: offset = their mean; (absmax − offset) in blocks of 256, one fp32 absmax2 per
//         block, each the index of the nearest entry of the signed dynamic map
//         (core/dynamic_map.hpp) to (absmax − offset) · (1 / absmax2). Dequantized: map · absmax2
//         + offset, two roundings.
//   int8  per row (the tensor's first dimension as stored): absmax of the row; each element
//         rint(x · (127 / absmax)). Dequantized: q · (absmax / 127). bitsandbytes' LLM.int8()
//         stores the same per-row codes but multiplies outlier columns in 16 bits at run time;
//         these weights are dequantized whole instead (docs/training.md says why).
// Every operation is one fp32 rounding in the order written here (this file's implementation is
// compiled without contraction), so tests/e2e/torch_quantize.py reproduces it bit for bit. A block
// whose absmax is 0 stores 0 and dequantizes to zeros.
//
// A tensor's record is one run of bytes: the codes, then (each part starting at a multiple of 4)
// the scales: nf4 the absmax floats, or with double quantization the absmax codes, the absmax2
// floats and the offset; int8 the row absmax floats.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace autotrain::kernels {

enum class QuantKind { nf4, int8 };

inline constexpr std::size_t kNf4Block = 64;
inline constexpr std::size_t kAbsmaxBlock = 256;  // double quantization's blocks of absmax values

// bitsandbytes' NormalFloat4 levels, ascending.
inline constexpr std::array<float, 16> kNf4Levels = {-1.0f,
                                                     -0.6961928009986877f,
                                                     -0.5250730514526367f,
                                                     -0.39491748809814453f,
                                                     -0.28444138169288635f,
                                                     -0.18477343022823334f,
                                                     -0.09105003625154495f,
                                                     0.0f,
                                                     0.07958029955625534f,
                                                     0.16093020141124725f,
                                                     0.24611230194568634f,
                                                     0.33791524171829224f,
                                                     0.44070982933044434f,
                                                     0.5626170039176941f,
                                                     0.7229568362236023f,
                                                     1.0f};

// Where the parts of one tensor's record lie, in bytes from its start.
struct QuantizedTensor {
  QuantKind kind = QuantKind::nf4;
  bool double_quant = false;  // nf4 only
  std::size_t rows = 0, cols = 0;
  std::size_t scales = 0;   // nf4: absmax floats (or absmax codes); int8: row absmax floats
  std::size_t scales2 = 0;  // double quantization: absmax2 floats, then the offset float
  std::size_t bytes = 0;    // the whole record, a multiple of 4

  std::size_t numel() const { return rows * cols; }
  std::size_t blocks() const { return (numel() + kNf4Block - 1) / kNf4Block; }  // nf4
  std::size_t absmax_blocks() const { return (blocks() + kAbsmaxBlock - 1) / kAbsmaxBlock; }
};

// The record of a rows × cols tensor in `kind`.
QuantizedTensor quantized_tensor(QuantKind kind, bool double_quant, std::size_t rows,
                                 std::size_t cols);

// record = the tensor x (rows · cols floats) quantized.
void quantize(const QuantizedTensor& tensor, const float* x, std::byte* record);
// out = the record dequantized (rows · cols floats). OpenMP over blocks or rows.
void dequantize(const QuantizedTensor& tensor, const std::byte* record, float* out);

// "int4" (nf4), "int8": AutoTrain's names; throws Error naming `what` otherwise.
QuantKind parse_quant_kind(std::string_view name, std::string_view what);

}  // namespace autotrain::kernels
