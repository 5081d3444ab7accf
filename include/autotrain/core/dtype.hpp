#pragma once
// Element types that cross layer boundaries (communicators, checkpoints, export), and the
// 16-bit float conversions done on the CPU (round to nearest even).
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace autotrain {

enum class DType { fp32, bf16, fp16, int32, int64 };

constexpr size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::fp32:
      return 4;
    case DType::bf16:
      return 2;
    case DType::fp16:
      return 2;
    case DType::int32:
      return 4;
    case DType::int64:
      return 8;
  }
  return 0;
}

constexpr std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::fp32:
      return "fp32";
    case DType::bf16:
      return "bf16";
    case DType::fp16:
      return "fp16";
    case DType::int32:
      return "int32";
    case DType::int64:
      return "int64";
  }
  return "?";
}

// Parses fp32|float32|bf16|bfloat16|fp16|float16|int32|int64; throws Error naming `what`.
DType parse_dtype(std::string_view text, std::string_view what);

inline uint16_t float_to_bf16(float value) {
  uint32_t bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((bits >> 16) | 0x40u);  // NaN
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

inline float bf16_to_float(uint16_t value) {
  return std::bit_cast<float>(static_cast<uint32_t>(value) << 16);
}

uint16_t float_to_fp16(float value);
float fp16_to_float(uint16_t value);

}  // namespace autotrain
