#pragma once
// The named parameter tensors of a model inside one flat fp32 buffer (DESIGN.md contract 1), in
// the units its family describes (model/family.hpp; the tensors of each family are listed in its
// file). Tensors of a unit are contiguous from the unit's offset; each unit is zero-padded to a
// multiple of world_size · alignment elements, so rank r owns the r-th equal part of every unit.
// The offsets of tensors inside a unit do not depend on world_size.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "autotrain/model/config.hpp"
#include "autotrain/model/family.hpp"

namespace autotrain::model {

struct ParamTensor {
  std::string name;
  std::vector<std::int64_t> shape;
  std::size_t offset = 0;  // in the flat buffer
  std::size_t numel = 0;
  int unit = 0;
  bool weight_decay = false;    // true for matmul/embedding weights; false for biases and norms
  InitRule init;                // from scratch
  std::int64_t file_rows = -1;  // rows in Hugging Face files when fewer than shape[0]
  Role role = Role::none;       // what it is to the model (model/family.hpp)

  // The shape in Hugging Face files (the padded vocabulary rows left out) and its elements.
  std::vector<std::uint64_t> file_shape() const;
  std::size_t file_numel() const;
};

struct ParamUnit {
  std::string name;              // "embeddings", "h.0", ..., the final norm's
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
  // Other tensors in the family's unit structure and hook order (LoRA's adapters, model/lora.hpp):
  // `units` has one entry per unit of the model; a unit may hold no tensor.
  ParamLayout(const ModelConfig& config, std::vector<UnitSpec> units, int world_size,
              std::size_t alignment = kDefaultAlignment);

  const ModelConfig& config() const { return config_; }
  int world_size() const { return world_size_; }
  std::size_t alignment() const { return alignment_; }

  const std::vector<ParamTensor>& tensors() const { return tensors_; }
  const std::vector<ParamUnit>& units() const { return units_; }
  int num_units() const { return static_cast<int>(units_.size()); }
  static int block_unit(int layer) { return 1 + layer; }
  int final_norm_unit() const { return config_.n_layer + 1; }
  const ModelFamily& family() const { return family_of(config_); }
  // The units forward and backward ask for, in order (the family's).
  const HookOrder& hook_order() const { return hook_order_; }

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
  // Offset in `unit` of its first tensor with `role`, or kNoTensor when it has none.
  static constexpr std::size_t kNoTensor = ~std::size_t{0};
  std::size_t role_offset(int unit, Role role) const;

 private:
  ModelConfig config_;
  int world_size_;
  std::size_t alignment_;
  std::vector<ParamTensor> tensors_;
  std::vector<ParamUnit> units_;
  HookOrder hook_order_;
  std::size_t padded_size_ = 0;
  std::size_t num_parameters_ = 0;
};

}  // namespace autotrain::model
