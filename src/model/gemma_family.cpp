// Gemma (GemmaForCausalLM, model_type gemma: Gemma 1 and 1.1, CodeGemma), Gemma 2
// (Gemma2ForCausalLM, gemma2) and Gemma 3's text model (Gemma3ForCausalLM, gemma3_text) on the
// Llama-style decoder, with what Gemma changes in it (model/config.hpp). Gemma 1 has the first
// four of these and Llama's block otherwise (one norm before attention, one before the MLP):
// embeddings scaled by sqrt(hidden_size), RMSNorm weights stored as offsets from 1, RMSNorms on
// the attention's and the MLP's outputs too (post_attention_layernorm, post_feedforward_layernorm;
// the MLP's input norm is pre_feedforward_layernorm), scores scaled by query_pre_attn_scalar^-1/2,
// a GeGLU MLP (gelu_pytorch_tanh), a tied head, and sliding-window layers alternating with global
// ones (layer_types, or the default pattern: Gemma 2 every other layer from layer 0, Gemma 3 five
// of every sliding_window_pattern = 6). Gemma 2 soft-caps the attention scores
// (attn_logit_softcapping) and the logits (final_logit_softcapping); Gemma 3 normalises each
// head's q and k (q_norm, k_norm, offsets from 1 too) and rotates its sliding layers by
// rope_local_base_freq without scaling, its global ones by rope_theta with rope_scaling.
// Tensors, init and hook order: decoder_family.cpp. The model: llama.cpp.
#include <string>

#include "autotrain/core/error.hpp"
#include "autotrain/core/strings.hpp"
#include "decoder_family.hpp"

namespace autotrain::model {
namespace {

struct Version {
  const char* model_type;
  const char* name;
  const char* classifier;  // the name with a score head
  double rope_theta;       // the default when config.json has none
  int pattern;             // the default layer pattern: every pattern-th layer is global
};
constexpr Version kGemma{"gemma", "GemmaForCausalLM", "GemmaForSequenceClassification", 10000, 0};
constexpr Version kGemma2{"gemma2", "Gemma2ForCausalLM", "Gemma2ForSequenceClassification", 10000,
                          2};
constexpr Version kGemma3{"gemma3_text", "Gemma3ForCausalLM", "Gemma3TextForSequenceClassification",
                          1000000, 6};

// Which layers are sliding: layer_types when given, else the version's pattern.
std::vector<bool> sliding_layers(const HfConfig& config, const Version& v, int layers) {
  std::vector<bool> sliding(std::size_t(layers), false);
  if (config.has("layer_types")) {
    const auto& types = config.json()["layer_types"];
    AT_CHECK(types.is_array() && types.size() == std::size_t(layers), config.file(),
             ": layer_types should list num_hidden_layers = ", layers, " entries, got ",
             types.dump());
    for (std::size_t l = 0; l < sliding.size(); ++l) {
      AT_CHECK(types[l] == "sliding_attention" || types[l] == "full_attention", config.file(),
               ": layer_types[", l, "] is ", types[l].dump(),
               " (expected \"sliding_attention\" or \"full_attention\")");
      sliding[l] = types[l] == "sliding_attention";
    }
    return sliding;
  }
  const int pattern = config.integer_or("sliding_window_pattern", v.pattern);
  for (int l = 0; l < layers; ++l) sliding[std::size_t(l)] = (l + 1) % pattern != 0;
  return sliding;
}

class GemmaFamily final : public DecoderFamily {
 public:
  // Gemma 1: Gemma 2's embedding scale, norm offsets, GeGLU and tied head on Llama's block; no
  // soft caps, no sliding windows, the scores scaled by head_dim^-1/2.
  static ModelConfig read_gemma1(const HfConfig& config) {
    config.expect_architecture(kGemma.name);
    ModelConfig c = read_common(config, kGemma.name, kGemma.rope_theta);
    if (!config.has("hidden_activation") && !config.has("hidden_act")) {
      c.gate = GateActivation::gelu_tanh;
    }
    c.tie_word_embeddings = config.bool_or("tie_word_embeddings", true);
    c.qkv_bias = c.o_bias = config.bool_or("attention_bias", false);
    c.norm_offset = c.embed_scale = true;
    c.validate();
    return c;
  }

  std::vector<HfArchitecture> architectures() const override {
    return {{kGemma.model_type, kGemma.name, kGemma.classifier},
            {kGemma2.model_type, kGemma2.name, kGemma2.classifier},
            {kGemma3.model_type, kGemma3.name, kGemma3.classifier}};
  }
  std::string describe(const ModelConfig& c) const override {
    const char* name = !c.sandwich_norms ? "Gemma (" : c.qk_norm ? "Gemma 3 (" : "Gemma 2 (";
    return cat(name, c.architecture, ")");
  }

  ModelConfig from_hf_config(const nlohmann::json& json, const std::string& file) const override {
    const HfConfig config(json, file);
    const Version& v = json["model_type"] == kGemma.model_type    ? kGemma
                       : json["model_type"] == kGemma2.model_type ? kGemma2
                                                                  : kGemma3;
    if (&v == &kGemma) return read_gemma1(config);
    const bool gemma3 = &v == &kGemma3;
    config.expect_architecture(v.name);
    config.expect_bool("use_bidirectional_attention", false);
    ModelConfig c = read_common(config, v.name, v.rope_theta);
    if (!config.has("hidden_activation") && !config.has("hidden_act")) {
      c.gate = GateActivation::gelu_tanh;  // Gemma's default
    }
    c.tie_word_embeddings = config.bool_or("tie_word_embeddings", true);
    c.qkv_bias = c.o_bias = config.bool_or("attention_bias", false);
    c.norm_offset = c.embed_scale = c.sandwich_norms = true;
    c.qk_norm = gemma3;
    c.query_pre_attn_scalar = config.number_or("query_pre_attn_scalar", c.head_size());
    c.attn_softcap = config.number_or("attn_logit_softcapping", gemma3 ? 0 : 50);
    c.final_softcap = config.number_or("final_logit_softcapping", gemma3 ? 0 : 30);
    AT_CHECK(c.query_pre_attn_scalar > 0 && c.attn_softcap >= 0 && c.final_softcap >= 0, file,
             ": query_pre_attn_scalar must be > 0 and the soft caps >= 0 (or null), got ",
             c.query_pre_attn_scalar, ", ", c.attn_softcap, ", ", c.final_softcap);
    c.sliding_window = config.integer_or("sliding_window", 4096);
    c.sliding_layers = sliding_layers(config, v, c.n_layer);
    if (gemma3) c.rope_local_theta = config.number_or("rope_local_base_freq", 10000);
    c.validate();
    return c;
  }

  nlohmann::ordered_json hf_config(const ModelConfig& c) const override {
    const bool gemma3 = c.architecture == kGemma3.name;
    const bool gemma1 = c.architecture == kGemma.name;
    nlohmann::ordered_json json = write_common(c, gemma1   ? kGemma.model_type
                                                  : gemma3 ? kGemma3.model_type
                                                           : kGemma2.model_type);
    json["hidden_activation"] = json["hidden_act"];
    json["attention_bias"] = c.o_bias;
    json["attention_dropout"] = 0.0;
    if (gemma1) return json;
    json["query_pre_attn_scalar"] = c.query_pre_attn_scalar;
    json["sliding_window"] = c.sliding_window;
    std::vector<std::string> types;
    for (int l = 0; l < c.n_layer; ++l) {
      types.push_back(c.window(l) > 0 ? "sliding_attention" : "full_attention");
    }
    json["layer_types"] = types;
    const auto cap = [](double value) {
      return value > 0 ? nlohmann::ordered_json(value) : nlohmann::ordered_json(nullptr);
    };
    json["attn_logit_softcapping"] = cap(c.attn_softcap);
    json["final_logit_softcapping"] = cap(c.final_softcap);
    if (gemma3) json["rope_local_base_freq"] = c.rope_local_theta;
    return json;
  }
};

}  // namespace

const ModelFamily& gemma_family() {
  static const GemmaFamily family;
  return family;
}

}  // namespace autotrain::model
