#pragma once
// What the families on the Llama-style decoder (llama.cpp, gpu/llama.cpp) share: their units and
// tensors (roles for the decoder, names the family's), the hook order, the FLOPs, and the
// config.json keys they have in common. A family on this decoder (llama_family.cpp,
// phi3_family.cpp) says which model_types it reads, how it names or fuses its tensors, and the
// keys that are its own.
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "autotrain/model/family.hpp"
#include "family_json.hpp"

namespace autotrain::model {

class DecoderFamily : public ModelFamily {
 public:
  Family family() const override { return Family::llama; }
  std::vector<UnitSpec> units(const ModelConfig& config) const override;
  HookOrder hook_order(const ModelConfig& config) const override;
  double flops_per_token(const ModelConfig& config, std::size_t parameters, int T) const override;
  bool ignored_file_tensor(const ModelConfig& config, std::string_view name) const override;

 protected:
  // Phi-3's names: one qkv_proj [Q + 2·KV, C] and one gate_up_proj [2I, C] instead of
  // q/k/v_proj and gate/up_proj (the same layout in the buffer).
  virtual bool fused_projections() const { return false; }

  // The keys every family on the decoder has (layers, heads, key/value heads, head_dim, widths,
  // vocabulary, positions, tie_word_embeddings, rms_norm_eps, rope_theta, rope_scaling,
  // partial_rotary_factor, hidden_act), into a config of family llama and `architecture`.
  static ModelConfig read_common(const HfConfig& config, std::string_view architecture,
                                 double default_rope_theta);
  // config.json's keys for them (rope_scaling included), in transformers' order.
  static nlohmann::ordered_json write_common(const ModelConfig& config,
                                             std::string_view model_type);
};

}  // namespace autotrain::model
