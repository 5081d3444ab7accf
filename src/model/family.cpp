// What every family shares: its summary, its FLOPs, its CPU model; reading config.json keys.
#include "autotrain/model/family.hpp"

#include <cmath>
#include <limits>

#include "autotrain/core/error.hpp"
#include "autotrain/core/json_integer.hpp"
#include "autotrain/core/strings.hpp"
#include "autotrain/model/causal_lm.hpp"
#include "autotrain/model/gpt2.hpp"
#include "autotrain/model/llama.hpp"
#include "family_json.hpp"

namespace autotrain::model {

std::string ModelFamily::shape_summary(const ModelConfig& c) const {
  std::string text = cat("hidden ", c.n_embd, ", ", c.n_head, " heads of ", c.head_size(), ", ",
                         c.kv_heads(), c.kv_heads() == 1 ? " key/value head" : " key/value heads",
                         ", MLP ", c.mlp_size(), ", ", c.block_size, " positions, vocabulary ",
                         c.vocab_size, c.tie_word_embeddings ? ", tied embeddings" : "");
  if (c.qkv_bias) text += ", q/k/v biases";
  if (c.qk_norm) text += ", q/k norm";
  if (c.rotary_size() != c.head_size())
    text += cat(", rotary on ", c.rotary_size(), " of ", c.head_size());
  const RopeScaling& rope = c.rope_scaling;
  if (!rope.type.empty()) text += cat(", rope_scaling ", rope.type);
  if (rope.type == "yarn" || rope.type == "linear") text += cat(" (factor ", rope.factor, ")");
  return text;
}

std::string summary(const ModelConfig& c) {
  const ModelFamily& family = family_of(c);
  return cat(family.describe(c), ": ", c.n_layer, " layers, ", family.shape_summary(c),
             c.score_head ? cat(", score head (", classifier_architecture(c), ")") : "");
}

TensorSpec score_tensor(const ModelConfig& c) {
  return {"score.weight", {1, c.n_embd}, {InitRule::normal, 0.02}, true, -1, Role::score};
}

double flops_per_token(const ModelConfig& config, int T) {
  const ParamLayout layout(config);
  return layout.family().flops_per_token(config, layout.num_parameters(), T);
}

template <typename F>
std::unique_ptr<BasicCausalLM<F>> make_causal_lm(const ParamLayout& layout, int B, int T,
                                                 Recompute recompute) {
  if (layout.config().family == Family::gpt2) {
    return std::make_unique<BasicGpt2<F>>(layout, B, T, recompute);
  }
  return std::make_unique<BasicLlama<F>>(layout, B, T, recompute);
}

template std::unique_ptr<BasicCausalLM<float>> make_causal_lm(const ParamLayout&, int, int,
                                                              Recompute);
template std::unique_ptr<BasicCausalLM<double>> make_causal_lm(const ParamLayout&, int, int,
                                                               Recompute);

// --- HfConfig ---

int HfConfig::integer(const char* key) const {
  AT_CHECK(json_.contains(key), file_, ": key '", key, "' is missing");
  return json_integer<int>(json_[key], cat(file_, ": ", key), 1);
}

double HfConfig::number_or(const char* key, double fallback) const {
  if (!has(key)) return fallback;
  AT_CHECK(json_[key].is_number(), file_, ": ", key, " should be a number, got ",
           json_[key].dump());
  return json_[key].get<double>();
}

bool HfConfig::bool_or(const char* key, bool fallback) const {
  if (!has(key)) return fallback;
  AT_CHECK(json_[key].is_boolean(), file_, ": ", key, " should be true or false, got ",
           json_[key].dump());
  return json_[key].get<bool>();
}

std::string HfConfig::string_or(const char* key, std::string fallback) const {
  if (!has(key)) return fallback;
  AT_CHECK(json_[key].is_string(), file_, ": ", key, " should be a string, got ",
           json_[key].dump());
  return json_[key].get<std::string>();
}

void HfConfig::expect_architecture(std::string_view name) const {
  if (!has("architectures")) return;
  const auto& list = json_["architectures"];
  if (list.is_array()) {
    for (const auto& entry : list) {
      if (entry.is_string() && entry.get<std::string>() == name) return;
    }
  }
  unsupported("architectures",
              cat("[\"", name, "\"] for model_type ", json_.value("model_type", std::string())));
}

void HfConfig::expect_one_of(const char* key,
                             std::initializer_list<std::string_view> values) const {
  if (!has(key)) return;
  if (json_[key].is_string()) {
    for (const auto value : values) {
      if (json_[key].get<std::string>() == value) return;
    }
  }
  std::string expected;
  for (const auto value : values) expected += cat(expected.empty() ? "" : " or ", value);
  unsupported(key, expected);
}

void HfConfig::expect_number(const char* key, double value) const {
  if (has(key) && std::abs(number_or(key, value) - value) > 1e-12 * std::abs(value)) {
    unsupported(key, cat(value));
  }
}

void HfConfig::expect_bool(const char* key, bool value) const {
  if (bool_or(key, value) != value) unsupported(key, value ? "true" : "false");
}

void HfConfig::unsupported(const char* key, std::string_view expected) const {
  throw Error(
      cat(file_, ": ", key, " ", json_[key].dump(), " is not supported (expected ", expected, ")"));
}

}  // namespace autotrain::model
