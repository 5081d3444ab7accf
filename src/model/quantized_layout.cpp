#include "autotrain/model/quantized_layout.hpp"

#include <algorithm>
#include <cstring>

#include "autotrain/core/error.hpp"

namespace autotrain::model {
namespace {

constexpr std::size_t round4(std::size_t bytes) {
  return (bytes + 3) / 4 * 4;
}

std::vector<std::vector<QuantizedSegment>> plan_segments(const ParamLayout& layout,
                                                         QuantOptions options, DType raw) {
  std::vector<std::vector<QuantizedSegment>> units(static_cast<std::size_t>(layout.num_units()));
  for (int u = 0; u < layout.num_units(); ++u) {
    const ParamUnit& unit = layout.units()[static_cast<std::size_t>(u)];
    const auto first = layout.tensors().begin() + unit.first_tensor;
    const bool raw_unit = std::none_of(first, first + unit.tensor_count, [&](const ParamTensor& t) {
      return QuantizedLayout::quantizes(layout, t);
    });
    std::size_t byte = 0;
    for (int i = unit.first_tensor; i < unit.first_tensor + unit.tensor_count; ++i) {
      const ParamTensor& t = layout.tensors()[static_cast<std::size_t>(i)];
      QuantizedSegment segment{i, layout.offset_in_unit(t), t.numel, byte, 0, std::nullopt};
      if (raw_unit) {  // the unit's values as they are: the model can read the payload itself
        segment.bytes = t.numel * dtype_size(raw);
      } else if (QuantizedLayout::quantizes(layout, t)) {
        segment.record = kernels::quantized_tensor(options.kind, options.double_quant,
                                                   static_cast<std::size_t>(t.shape[0]),
                                                   static_cast<std::size_t>(t.shape[1]));
        segment.bytes = segment.record->bytes;
      } else {
        segment.bytes = round4(t.numel * dtype_size(raw));
      }
      byte += segment.bytes;
      units[static_cast<std::size_t>(u)].push_back(segment);
    }
  }
  return units;
}

std::vector<UnitSpec> word_units(const ParamLayout& layout,
                                 const std::vector<std::vector<QuantizedSegment>>& segments) {
  std::vector<UnitSpec> units;
  for (int u = 0; u < layout.num_units(); ++u) {
    std::size_t bytes = 0;
    for (const auto& s : segments[static_cast<std::size_t>(u)]) bytes += s.bytes;
    bytes = round4(bytes);
    UnitSpec unit{layout.units()[static_cast<std::size_t>(u)].name, {}};
    if (bytes > 0) {
      unit.tensors.push_back(
          {"payload", {static_cast<std::int64_t>(bytes / 4)}, InitRule{}, false, -1, Role::none});
    }
    units.push_back(std::move(unit));
  }
  return units;
}

// The tensor's values in the raw type's bits.
void write_raw(const std::vector<float>& values, DType raw, std::byte* out) {
  switch (raw) {
    case DType::fp32:
      std::memcpy(out, values.data(), values.size() * sizeof(float));
      return;
    case DType::bf16:
    case DType::fp16:
      for (std::size_t i = 0; i < values.size(); ++i) {
        const std::uint16_t bits =
            raw == DType::bf16 ? float_to_bf16(values[i]) : float_to_fp16(values[i]);
        std::memcpy(out + i * sizeof bits, &bits, sizeof bits);
      }
      return;
    default:
      throw Error("internal: quantized layout: raw type must be fp32, bf16 or fp16");
  }
}

}  // namespace

QuantizedLayout::QuantizedLayout(const ParamLayout& layout, QuantOptions options, DType raw)
    : layout_(layout),
      options_(options),
      raw_(raw),
      segments_(plan_segments(layout, options, raw)),
      words_(layout.config(), word_units(layout, segments_), layout.world_size()) {
  for (const auto& unit : segments_) {
    std::size_t bytes = 0;
    for (const auto& s : unit) {
      if (s.record) quantized_parameters_ += s.numel;
      bytes += s.bytes;
    }
    payload_bytes_ += round4(bytes);
  }
}

bool QuantizedLayout::raw_unit(int unit) const {
  const auto& all = segments(unit);
  return std::none_of(all.begin(), all.end(), [](const QuantizedSegment& s) { return s.record; });
}

bool QuantizedLayout::quantizes(const ParamLayout& layout, const ParamTensor& tensor) {
  const bool block = tensor.unit >= 1 && tensor.unit <= layout.config().n_layer;
  return block && tensor.shape.size() == 2 && tensor.weight_decay;
}

void QuantizedLayout::fill(int unit, const ParamSource& source, std::size_t begin,
                           std::span<std::uint32_t> out) const {
  std::fill(out.begin(), out.end(), 0u);
  const std::size_t first = begin * 4, last = (begin + out.size()) * 4;  // bytes wanted
  auto* into = reinterpret_cast<std::byte*>(out.data());
  std::vector<float> values;
  std::vector<std::byte> bytes;
  for (const QuantizedSegment& s : segments(unit)) {
    const std::size_t from = std::max(first, s.byte), to = std::min(last, s.byte + s.bytes);
    if (from >= to) continue;
    const ParamTensor& t = layout_.tensors()[static_cast<std::size_t>(s.tensor)];
    values.assign(s.numel, 0.0f);
    source.fill(layout_, values, t.offset);
    bytes.assign(s.bytes, std::byte{0});
    if (s.record) {
      kernels::quantize(*s.record, values.data(), bytes.data());
    } else {
      write_raw(values, raw_, bytes.data());
    }
    std::memcpy(into + (from - first), bytes.data() + (from - s.byte), to - from);
  }
}

void quantize_round_trip(const ParamLayout& layout, QuantOptions options, std::span<float> flat) {
  AT_CHECK(flat.size() >= layout.padded_size(), "internal: quantize_round_trip: ", flat.size(),
           " values for a layout of ", layout.padded_size());
  std::vector<std::byte> record;
  for (const ParamTensor& t : layout.tensors()) {
    if (!QuantizedLayout::quantizes(layout, t)) continue;
    const auto format = kernels::quantized_tensor(options.kind, options.double_quant,
                                                  static_cast<std::size_t>(t.shape[0]),
                                                  static_cast<std::size_t>(t.shape[1]));
    record.assign(format.bytes, std::byte{0});
    kernels::quantize(format, flat.data() + t.offset, record.data());
    kernels::dequantize(format, record.data(), flat.data() + t.offset);
  }
}

}  // namespace autotrain::model
