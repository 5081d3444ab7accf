#pragma once
// A frozen model stored with its block weights in 4 or 8 bits (QLoRA, `quantization: int4|int8`
// with peft; kernels/quantize.hpp has the formats). Which tensors: the 2-D weights of the blocks
// (every linear projection, adapted by LoRA or not); embeddings, norms, biases and the head stay in
// the compute type, as bitsandbytes leaves them.
//
// Each unit of the model becomes one payload of bytes: its tensors in layout order, a quantized
// tensor as its record, any other as its values in the compute type (`raw`); in a unit with a
// quantized tensor every part starts at a multiple of 4 bytes; a unit without one is its values
// as they are. The payloads, as 32-bit words, form a layout of their own (`words()`:
// one tensor a unit, padded for the world like any layout), which a ZeRO engine holds and, under
// stage 3, shards and all-gathers as it does parameters: 4 bits a weight travel instead of 16.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "autotrain/core/dtype.hpp"
#include "autotrain/kernels/quantize.hpp"
#include "autotrain/model/param_layout.hpp"
#include "autotrain/model/param_source.hpp"

namespace autotrain::model {

struct QuantOptions {
  kernels::QuantKind kind = kernels::QuantKind::nf4;
  bool double_quant = false;  // nf4: bnb_4bit_use_double_quant
};

// A tensor of a unit inside the unit's payload.
struct QuantizedSegment {
  int tensor = 0;      // index into the layout's tensors()
  std::size_t at = 0;  // its first element, from the unit's start
  std::size_t numel = 0;
  std::size_t byte = 0;                            // its first byte in the payload
  std::size_t bytes = 0;                           // its bytes there (a multiple of 4)
  std::optional<kernels::QuantizedTensor> record;  // nullopt: the values in the raw type
};

class QuantizedLayout {
 public:
  // `layout` (any world size) must outlive this; `raw` is the compute type the model runs in.
  QuantizedLayout(const ParamLayout& layout, QuantOptions options, DType raw);

  // Whether `tensor` of `layout` is stored quantized: a 2-D weight of a block unit.
  static bool quantizes(const ParamLayout& layout, const ParamTensor& tensor);

  const ParamLayout& layout() const { return layout_; }
  const QuantOptions& options() const { return options_; }
  DType raw() const { return raw_; }
  const std::vector<QuantizedSegment>& segments(int unit) const {
    return segments_[static_cast<std::size_t>(unit)];
  }
  // A unit without quantized tensors (the embeddings, the last unit): its payload is its values
  // in the raw type at their offsets, which the model can read as they are.
  bool raw_unit(int unit) const;
  // The payloads as 32-bit words, one tensor a unit, padded for the layout's world size.
  const ParamLayout& words() const { return words_; }

  // Words [begin, begin + out.size()) of `unit`'s payload (past its end: zeros), the weights from
  // `source` (filled a tensor at a time: only those the range touches are read and quantized).
  void fill(int unit, const ParamSource& source, std::size_t begin,
            std::span<std::uint32_t> out) const;

  // Weights stored quantized, and the bytes of the whole model's payloads against the same
  // model in the raw type.
  std::size_t quantized_parameters() const { return quantized_parameters_; }
  std::size_t payload_bytes() const { return payload_bytes_; }
  std::size_t raw_bytes() const { return layout_.padded_size() * dtype_size(raw_); }

 private:
  const ParamLayout& layout_;
  QuantOptions options_;
  DType raw_;
  std::vector<std::vector<QuantizedSegment>> segments_;
  ParamLayout words_;
  std::size_t quantized_parameters_ = 0;
  std::size_t payload_bytes_ = 0;
};

// Every tensor of `flat` (the layout's flat buffer) that a quantized base stores quantized
// replaced by its quantized-then-dequantized values: the weights a QLoRA adapter was trained
// against (autotrain generate --quantization).
void quantize_round_trip(const ParamLayout& layout, QuantOptions options, std::span<float> flat);

}  // namespace autotrain::model
