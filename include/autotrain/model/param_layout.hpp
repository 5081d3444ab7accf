#pragma once
// The named parameter tensors of a GPT-2 model inside one flat fp32 buffer (DESIGN.md contract 1).
//
// Names and shapes are Hugging Face GPT-2's (Conv1D weights are [in, out]):
//   unit 0        transformer.wte.weight [Vp, C] (rows >= V are zero and stay zero),
//                 transformer.wpe.weight [T, C]
//   unit 1 + l    transformer.h.{l}.ln_1.weight/bias [C], .attn.c_attn.weight [C, 3C],
//                 .attn.c_attn.bias [3C], .attn.c_proj.weight [C, C], .attn.c_proj.bias [C],
//                 .ln_2.weight/bias [C], .mlp.c_fc.weight [C, 4C], .mlp.c_fc.bias [4C],
//                 .mlp.c_proj.weight [4C, C], .mlp.c_proj.bias [C]
//   unit L + 1    transformer.ln_f.weight/bias [C]
// The LM head is tied to wte. Tensors of a unit are contiguous from the unit's offset; each unit
// is zero-padded to a multiple of world_size · alignment elements, so rank r owns the r-th equal
// part of every unit. The offsets of tensors inside a unit do not depend on world_size.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "autotrain/model/config.hpp"

namespace autotrain::model {

struct ParamTensor {
  std::string name;
  std::vector<std::int64_t> shape;
  std::size_t offset = 0;  // in the flat buffer
  std::size_t numel = 0;
  int unit = 0;
  bool weight_decay = false;  // true for matmul/embedding weights; false for biases and norms
};

struct ParamUnit {
  std::string name;              // "embeddings", "h.0", ..., "ln_f"
  std::size_t offset = 0;        // in the flat buffer
  std::size_t numel = 0;         // sum of its tensors
  std::size_t padded_numel = 0;  // numel rounded up to a multiple of world_size · alignment
  int first_tensor = 0;          // index into tensors()
  int tensor_count = 0;
};

// [offset, offset + size) of the flat buffer.
struct Range {
  std::size_t offset = 0;
  std::size_t size = 0;
};

class ParamLayout {
 public:
  static constexpr std::size_t kDefaultAlignment = 16;  // floats: 64 bytes

  explicit ParamLayout(const ModelConfig& config, int world_size = 1,
                       std::size_t alignment = kDefaultAlignment);

  const ModelConfig& config() const { return config_; }
  int world_size() const { return world_size_; }
  std::size_t alignment() const { return alignment_; }

  const std::vector<ParamTensor>& tensors() const { return tensors_; }
  const std::vector<ParamUnit>& units() const { return units_; }
  int num_units() const { return static_cast<int>(units_.size()); }
  static int block_unit(int layer) { return 1 + layer; }
  int final_norm_unit() const { return config_.n_layer + 1; }

  // Elements of the whole flat buffer, padding included.
  std::size_t padded_size() const { return padded_size_; }
  // Logical parameters: padding and the padded vocabulary rows excluded (for MFU and logs).
  std::size_t num_parameters() const { return num_parameters_; }

  // The part of `unit` that `rank` owns: padded_numel / world_size elements.
  Range shard(int unit, int rank) const;

  // Throws autotrain::Error (with a did-you-mean) for an unknown name.
  const ParamTensor& tensor(std::string_view name) const;
  // Offset of a tensor from the start of its unit.
  std::size_t offset_in_unit(const ParamTensor& t) const {
    return t.offset - units_[t.unit].offset;
  }

 private:
  ModelConfig config_;
  int world_size_;
  std::size_t alignment_;
  std::vector<ParamTensor> tensors_;
  std::vector<ParamUnit> units_;
  std::size_t padded_size_ = 0;
  std::size_t num_parameters_ = 0;
};

// Where each tensor starts inside its unit (the same in every block): what the models add to a
// unit's parameter or gradient pointer.
struct TensorOffsets {
  explicit TensorOffsets(const ParamLayout& layout);
  std::size_t wte, wpe;
  std::size_t ln1w, ln1b, qkvw, qkvb, attprojw, attprojb, ln2w, ln2b, fcw, fcb, fcprojw, fcprojb;
  std::size_t lnfw, lnfb;
};

}  // namespace autotrain::model
