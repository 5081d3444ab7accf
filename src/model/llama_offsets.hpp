#pragma once
// Where each tensor of the Llama-style decoder sits in its unit, found by role (model/family.hpp)
// so that every family on this decoder (the Llama family, Phi-3) runs it whatever it names or
// fuses: shared by the CPU model (llama.cpp) and the device model and decoder (gpu/). The block
// tensors' offsets are layer 0's (every block unit has the same layout).
#include <cstddef>

#include "autotrain/core/error.hpp"
#include "autotrain/model/param_layout.hpp"

namespace autotrain::model {

struct LlamaOffsets {
  static constexpr std::size_t kNone = ParamLayout::kNoTensor;  // a tensor the model lacks
  std::size_t embed, ln1w, qkvw, qkvb, qnorm, knorm, ow, ob, ln2w, guw, gub, downw, downb;
  std::size_t attn_post, mlp_post;  // sandwich_norms: the norms of the two branches' outputs
  // head: in unit 0 (embed) for a tied LM head, else in unit L + 1 (lm_head, or score).
  std::size_t normw, head;

  explicit LlamaOffsets(const ParamLayout& layout) {
    const int block = ParamLayout::block_unit(0), last = layout.final_norm_unit();
    const auto at = [&](int unit, Role role, bool needed) {
      const std::size_t offset = layout.role_offset(unit, role);
      AT_CHECK(!needed || offset != kNone, "internal: the ",
               layout.family().describe(layout.config()), " layout has no tensor of role ",
               static_cast<int>(role), " in unit ", unit);
      return offset;
    };
    const ModelConfig& c = layout.config();
    embed = at(0, Role::embed, true);
    ln1w = at(block, Role::norm1, true);
    qkvw = at(block, Role::qkv, true);  // q, k, v one after the other: one [QKV, C]
    qkvb = at(block, Role::qkv_bias, c.qkv_bias);
    qnorm = at(block, Role::q_norm, c.qk_norm);
    knorm = at(block, Role::k_norm, c.qk_norm);
    ow = at(block, Role::o, true);
    ob = at(block, Role::o_bias, c.o_bias);
    ln2w = at(block, Role::norm2, true);
    guw = at(block, Role::gate_up, true);  // gate, up: one [2I, C]
    gub = at(block, Role::gate_up_bias, c.mlp_bias);
    downw = at(block, Role::down, true);
    downb = at(block, Role::down_bias, c.mlp_bias);
    attn_post = at(block, Role::post_attn_norm, c.sandwich_norms);
    mlp_post = at(block, Role::post_mlp_norm, c.sandwich_norms);
    normw = at(last, Role::final_norm, true);
    head = c.score_head            ? at(last, Role::score, true)
           : c.tie_word_embeddings ? embed
                                   : at(last, Role::head, true);
  }
};

// p + offset, or null for a tensor the model does not have (the kernels take a null bias).
template <typename T>
T* tensor_at(T* p, std::size_t offset) {
  return offset == LlamaOffsets::kNone ? nullptr : p + offset;
}

}  // namespace autotrain::model
