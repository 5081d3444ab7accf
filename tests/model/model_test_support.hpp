#pragma once
// For the model tests: token ids, and a UnitAccess that behaves as a ZeRO stage 3 engine does.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "autotrain/model/param_layout.hpp"
#include "autotrain/model/unit_access.hpp"

namespace autotrain::model {

// A tiny Qwen3-shaped model with every option the Llama family has: grouped key/value heads
// (4 over 2), head_dim 6 (not n_embd / n_head = 4), q/k/v biases, q/k norms, an untied head.
inline ModelConfig tiny_qwen3_config(int layers, int positions, int vocab) {
  ModelConfig c = ModelConfig::gpt2(layers, 4, 16, positions, vocab);
  c.family = Family::llama;
  c.architecture = "Qwen3ForCausalLM";
  c.n_kv_head = 2;
  c.head_dim = 6;
  c.intermediate_size = 24;
  c.qkv_bias = true;
  c.qk_norm = true;
  c.tie_word_embeddings = false;
  return c;
}

inline std::vector<std::int32_t> random_tokens(std::size_t n, int vocab, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> dist(0, vocab - 1);
  std::vector<std::int32_t> tokens(n);
  for (auto& t : tokens) t = dist(gen);
  return tokens;
}

// Gives each unit its parameters in a private copy that is poisoned with NaN on release, and
// gradients in per-unit buffers: what a ZeRO stage 3 engine does. Records every hook call.
class GatheringAccess final : public UnitAccess {
 public:
  GatheringAccess(const ParamLayout& layout, const std::vector<float>& params)
      : layout_(layout), params_(params) {
    for (const auto& unit : layout.units()) {
      gathered_.emplace_back(unit.padded_numel, std::numeric_limits<float>::quiet_NaN());
      unit_grads_.emplace_back(unit.padded_numel, 0.0f);
    }
  }
  const float* params(int unit) override {
    calls.push_back("params(" + std::to_string(unit) + ")");
    const auto& u = layout_.units()[unit];
    std::copy_n(params_.begin() + static_cast<std::ptrdiff_t>(u.offset), u.padded_numel,
                gathered_[unit].begin());
    return gathered_[unit].data();
  }
  void release(int unit) override {
    calls.push_back("release(" + std::to_string(unit) + ")");
    std::fill(gathered_[unit].begin(), gathered_[unit].end(),
              std::numeric_limits<float>::quiet_NaN());
  }
  float* grads(int unit) override {
    calls.push_back("grads(" + std::to_string(unit) + ")");
    return unit_grads_[unit].data();
  }
  void grads_ready(int unit) override {
    calls.push_back("grads_ready(" + std::to_string(unit) + ")");
  }
  std::vector<std::string> calls;
  std::vector<std::vector<float>> unit_grads_;

 private:
  const ParamLayout& layout_;
  const std::vector<float>& params_;
  std::vector<std::vector<float>> gathered_;
};

}  // namespace autotrain::model
