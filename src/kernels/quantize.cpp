// 4- and 8-bit weights (kernels/quantize.hpp). Compiled with -ffp-contract=off (CMakeLists.txt):
// each product and sum is rounded on its own, as in the PyTorch reference.
#include "autotrain/kernels/quantize.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "autotrain/core/dynamic_map.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/strings.hpp"

namespace autotrain::kernels {
namespace {

constexpr std::size_t round4(std::size_t bytes) {
  return (bytes + 3) / 4 * 4;
}

// The decision points between consecutive NF4 levels: their midpoints, in double, rounded once.
std::array<float, 15> nf4_midpoints() {
  std::array<float, 15> mid{};
  for (std::size_t k = 0; k < mid.size(); ++k) {
    mid[k] = static_cast<float>((double{kNf4Levels[k]} + double{kNf4Levels[k + 1]}) / 2.0);
  }
  return mid;
}

// The NF4 code of a normalised value: how many midpoints lie below it (a value on a midpoint
// takes the lower level, as bitsandbytes' decision tree).
std::uint8_t nf4_code(float normalised, const std::array<float, 15>& mid) {
  std::uint8_t code = 0;
  for (float m : mid) code += normalised > m ? 1 : 0;
  return code;
}

// The index of the map entry nearest to `value` (the lower one on a tie).
std::uint8_t nearest_in_map(float value, const std::array<float, 256>& map) {
  const auto above = std::lower_bound(map.begin(), map.end(), value);
  if (above == map.begin()) return 0;
  if (above == map.end()) return 255;
  const auto below = above - 1;
  const bool up = std::fabs(*above - value) < std::fabs(value - *below);
  return static_cast<std::uint8_t>((up ? above : below) - map.begin());
}

float absmax_of(const float* x, std::size_t n) {
  float most = 0.0f;
  for (std::size_t i = 0; i < n; ++i) most = std::max(most, std::fabs(x[i]));
  return most;
}

float* floats_at(std::byte* record, std::size_t offset) {
  return reinterpret_cast<float*>(record + offset);
}
const float* floats_at(const std::byte* record, std::size_t offset) {
  return reinterpret_cast<const float*>(record + offset);
}

// The absmax of every nf4 block, from the record (double quantization undone).
std::vector<float> nf4_absmax(const QuantizedTensor& t, const std::byte* record) {
  std::vector<float> absmax(t.blocks());
  if (!t.double_quant) {
    std::memcpy(absmax.data(), record + t.scales, absmax.size() * sizeof(float));
    return absmax;
  }
  const auto* codes = reinterpret_cast<const std::uint8_t*>(record + t.scales);
  const float* absmax2 = floats_at(record, t.scales2);
  const float offset = absmax2[t.absmax_blocks()];
  const auto& map = signed_dynamic_map();
  for (std::size_t b = 0; b < absmax.size(); ++b) {
    const float scaled = map[codes[b]] * absmax2[b / kAbsmaxBlock];
    absmax[b] = scaled + offset;
  }
  return absmax;
}

void quantize_nf4(const QuantizedTensor& t, const float* x, std::byte* record) {
  static const std::array<float, 15> mid = nf4_midpoints();
  const std::size_t n = t.numel();
  std::vector<float> absmax(t.blocks());
  auto* packed = reinterpret_cast<std::uint8_t*>(record);
  std::memset(packed, 0, (n + 1) / 2);
#pragma omp parallel for schedule(static) if (n > (1u << 16))
  for (std::size_t b = 0; b < absmax.size(); ++b) {
    const std::size_t begin = b * kNf4Block, end = std::min(n, begin + kNf4Block);
    absmax[b] = absmax_of(x + begin, end - begin);
    const float inverse = absmax[b] > 0.0f ? 1.0f / absmax[b] : 0.0f;
    for (std::size_t i = begin; i < end; ++i) {
      const std::uint8_t code = absmax[b] > 0.0f ? nf4_code(x[i] * inverse, mid) : 7;  // 7: 0.0
      packed[i / 2] |= static_cast<std::uint8_t>(i % 2 == 0 ? code << 4 : code);
    }
  }
  if (!t.double_quant) {
    std::memcpy(record + t.scales, absmax.data(), absmax.size() * sizeof(float));
    return;
  }
  double sum = 0.0;
  for (float a : absmax) sum += a;
  const auto offset = static_cast<float>(sum / static_cast<double>(absmax.size()));
  auto* codes = reinterpret_cast<std::uint8_t*>(record + t.scales);
  float* absmax2 = floats_at(record, t.scales2);
  const auto& map = signed_dynamic_map();
  for (std::size_t c = 0; c < t.absmax_blocks(); ++c) {
    const std::size_t begin = c * kAbsmaxBlock, end = std::min(absmax.size(), begin + kAbsmaxBlock);
    for (std::size_t b = begin; b < end; ++b) absmax[b] = absmax[b] - offset;
    absmax2[c] = absmax_of(absmax.data() + begin, end - begin);
    const float inverse = absmax2[c] > 0.0f ? 1.0f / absmax2[c] : 0.0f;
    for (std::size_t b = begin; b < end; ++b) codes[b] = nearest_in_map(absmax[b] * inverse, map);
  }
  absmax2[t.absmax_blocks()] = offset;
}

void dequantize_nf4(const QuantizedTensor& t, const std::byte* record, float* out) {
  const std::vector<float> absmax = nf4_absmax(t, record);
  const std::size_t n = t.numel();
  const auto* packed = reinterpret_cast<const std::uint8_t*>(record);
#pragma omp parallel for schedule(static) if (n > (1u << 18))
  for (std::size_t b = 0; b < absmax.size(); ++b) {
    const std::size_t begin = b * kNf4Block, end = std::min(n, begin + kNf4Block);
    const float scale = absmax[b];
    for (std::size_t i = begin; i < end; ++i) {
      const std::uint8_t byte = packed[i / 2];
      const int code = i % 2 == 0 ? byte >> 4 : byte & 0xF;
      out[i] = kNf4Levels[static_cast<std::size_t>(code)] * scale;
    }
  }
}

void quantize_int8(const QuantizedTensor& t, const float* x, std::byte* record) {
  auto* codes = reinterpret_cast<std::int8_t*>(record);
  float* absmax = floats_at(record, t.scales);
#pragma omp parallel for schedule(static) if (t.numel() > (1u << 16))
  for (std::size_t r = 0; r < t.rows; ++r) {
    const float* row = x + r * t.cols;
    absmax[r] = absmax_of(row, t.cols);
    const float factor = absmax[r] > 0.0f ? 127.0f / absmax[r] : 0.0f;
    for (std::size_t c = 0; c < t.cols; ++c) {
      const float q = std::nearbyint(row[c] * factor);
      codes[r * t.cols + c] = static_cast<std::int8_t>(std::clamp(q, -127.0f, 127.0f));
    }
  }
}

void dequantize_int8(const QuantizedTensor& t, const std::byte* record, float* out) {
  const auto* codes = reinterpret_cast<const std::int8_t*>(record);
  const float* absmax = floats_at(record, t.scales);
#pragma omp parallel for schedule(static) if (t.numel() > (1u << 18))
  for (std::size_t r = 0; r < t.rows; ++r) {
    const float scale = absmax[r] / 127.0f;
    for (std::size_t c = 0; c < t.cols; ++c) {
      out[r * t.cols + c] = static_cast<float>(codes[r * t.cols + c]) * scale;
    }
  }
}

}  // namespace

QuantizedTensor quantized_tensor(QuantKind kind, bool double_quant, std::size_t rows,
                                 std::size_t cols) {
  QuantizedTensor t;
  t.kind = kind;
  t.double_quant = kind == QuantKind::nf4 && double_quant;
  t.rows = rows;
  t.cols = cols;
  if (kind == QuantKind::int8) {
    t.scales = round4(t.numel());
    t.bytes = t.scales + rows * sizeof(float);
    return t;
  }
  t.scales = round4((t.numel() + 1) / 2);
  if (!t.double_quant) {
    t.bytes = t.scales + t.blocks() * sizeof(float);
    return t;
  }
  t.scales2 = t.scales + round4(t.blocks());
  t.bytes = t.scales2 + (t.absmax_blocks() + 1) * sizeof(float);
  return t;
}

void quantize(const QuantizedTensor& tensor, const float* x, std::byte* record) {
  std::memset(record, 0, tensor.bytes);
  if (tensor.kind == QuantKind::int8) {
    quantize_int8(tensor, x, record);
  } else {
    quantize_nf4(tensor, x, record);
  }
}

void dequantize(const QuantizedTensor& tensor, const std::byte* record, float* out) {
  if (tensor.kind == QuantKind::int8) {
    dequantize_int8(tensor, record, out);
  } else {
    dequantize_nf4(tensor, record, out);
  }
}

QuantKind parse_quant_kind(std::string_view name, std::string_view what) {
  if (name == "int4") return QuantKind::nf4;
  if (name == "int8") return QuantKind::int8;
  throw Error(cat(what, ": expected int4 or int8, got '", name, "'"));
}

}  // namespace autotrain::kernels
