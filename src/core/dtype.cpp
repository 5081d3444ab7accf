#include "autotrain/core/dtype.hpp"

#include "autotrain/core/error.hpp"

namespace autotrain {

DType parse_dtype(std::string_view text, std::string_view what) {
  if (text == "fp32" || text == "float32") return DType::fp32;
  if (text == "bf16" || text == "bfloat16") return DType::bf16;
  if (text == "fp16" || text == "float16") return DType::fp16;
  if (text == "int32") return DType::int32;
  if (text == "int64") return DType::int64;
  throw Error(
      cat(what, ": unknown dtype '", text, "' (expected fp32, bf16, fp16, int32 or int64)"));
}

uint16_t float_to_fp16(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  const uint32_t abs = bits & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);   // NaN
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow -> inf
  if (abs < 0x38800000u) {
    // Subnormal or zero in fp16: scale into the 10-bit mantissa with round to nearest even.
    if (abs < 0x33000000u) return static_cast<uint16_t>(sign);
    const uint32_t exponent = abs >> 23;
    const uint32_t mantissa = (abs & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - exponent;  // result = value / 2^-24, the fp16 subnormal step
    uint32_t result = mantissa >> shift;
    const uint32_t remainder = mantissa & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (remainder > half || (remainder == half && (result & 1u))) ++result;
    return static_cast<uint16_t>(sign | result);
  }
  uint32_t rebased = abs - 0x38000000u;  // exponent bias 127 -> 15
  rebased += 0xfffu + ((rebased >> 13) & 1u);
  return static_cast<uint16_t>(sign | (rebased >> 13));
}

float fp16_to_float(uint16_t value) {
  const uint32_t sign = (static_cast<uint32_t>(value) & 0x8000u) << 16;
  const uint32_t exponent = (value >> 10) & 0x1fu;
  const uint32_t mantissa = value & 0x3ffu;
  if (exponent == 0) {
    if (mantissa == 0) return std::bit_cast<float>(sign);
    // Subnormal: value = mantissa * 2^-24.
    const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

}  // namespace autotrain
