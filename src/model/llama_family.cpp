// The Llama family: LlamaForCausalLM (Llama 2, 3, 3.1 with llama3 rope scaling, 3.2 with tied
// embeddings, TinyLlama, SmolLM), MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM.
// Pre-RMSNorm blocks without positions in the embeddings: rotary embeddings on q and k in the
// Hugging Face convention (dimension i pairs with i + D/2), grouped key/value heads (NKV divides
// NH) of D = head_dim, a SwiGLU MLP of intermediate_size I, a final RMSNorm and an LM head
// (untied, or the embeddings). Qwen2 adds q/k/v biases, Qwen3 a per-head RMSNorm of q and k
// before the rotation and an explicit head_dim; Llama's attention_bias / mlp_bias add biases.
//
// Tensors, init and hook order: decoder_family.cpp. The model: llama.cpp.
#include <string>

#include "autotrain/core/error.hpp"
#include "autotrain/core/strings.hpp"
#include "decoder_family.hpp"

namespace autotrain::model {
namespace {

struct Architecture {
  const char* model_type;
  const char* name;
  const char* classifier;  // the name with a score head
  bool qkv_bias;           // Qwen2's, always
  double rope_theta;       // the default when config.json has none
  bool sliding_by_flag;    // Qwen: sliding_window applies only with use_sliding_window
};
constexpr Architecture kArchitectures[] = {
    {"llama", "LlamaForCausalLM", "LlamaForSequenceClassification", false, 10000, false},
    {"mistral", "MistralForCausalLM", "MistralForSequenceClassification", false, 10000, false},
    {"qwen2", "Qwen2ForCausalLM", "Qwen2ForSequenceClassification", true, 10000, true},
    {"qwen3", "Qwen3ForCausalLM", "Qwen3ForSequenceClassification", false, 10000, true},
};

const Architecture& architecture(std::string_view key, bool by_name) {
  for (const auto& a : kArchitectures) {
    if (key == (by_name ? a.name : a.model_type)) return a;
  }
  throw Error(cat(by_name ? "architecture " : "model_type ", key, " is not of the Llama family"));
}

class LlamaFamily final : public DecoderFamily {
 public:
  std::vector<HfArchitecture> architectures() const override {
    std::vector<HfArchitecture> names;
    for (const auto& a : kArchitectures) names.push_back({a.model_type, a.name, a.classifier});
    return names;
  }
  std::string describe(const ModelConfig& c) const override {
    return cat("Llama family (", c.architecture, ")");
  }

  ModelConfig from_hf_config(const nlohmann::json& json, const std::string& file) const override {
    const HfConfig config(json, file);
    const Architecture& arch = architecture(json["model_type"].get<std::string>(), false);
    config.expect_architecture(arch.name);
    ModelConfig c = read_common(config, arch.name, arch.rope_theta);
    const bool attention_bias = config.bool_or("attention_bias", false);
    c.qkv_bias = arch.qkv_bias || attention_bias;
    c.o_bias = attention_bias;
    c.mlp_bias = config.bool_or("mlp_bias", false);
    c.qk_norm = std::string(arch.model_type) == "qwen3";
    const bool sliding = !arch.sliding_by_flag || config.bool_or("use_sliding_window", false);
    if (sliding && config.has("sliding_window")) {
      c.sliding_window = config.integer("sliding_window");
      // Qwen's window applies from layer max_window_layers on.
      const int first = arch.sliding_by_flag ? config.integer_or("max_window_layers", 0) : 0;
      if (first > 0) {
        c.sliding_layers.assign(std::size_t(c.n_layer), false);
        for (int l = first; l < c.n_layer; ++l) c.sliding_layers[std::size_t(l)] = true;
      }
    }
    c.validate();
    return c;
  }

  nlohmann::ordered_json hf_config(const ModelConfig& c) const override {
    const Architecture& arch = architecture(c.architecture, true);
    nlohmann::ordered_json json = write_common(c, arch.model_type);
    json["attention_bias"] = c.o_bias;
    json["attention_dropout"] = 0.0;
    if (std::string(arch.model_type) == "llama") json["mlp_bias"] = c.mlp_bias;
    if (c.sliding_window > 0) json["sliding_window"] = c.sliding_window;
    if (arch.sliding_by_flag) {
      json["use_sliding_window"] = c.sliding_window > 0;
      int first = 0;  // the first sliding layer
      while (first < c.n_layer && c.window(first) == 0) ++first;
      json["max_window_layers"] = c.sliding_window > 0 ? first : c.n_layer;
    }
    if (c.sliding_window == 0 && !arch.sliding_by_flag) json["sliding_window"] = nullptr;
    return json;
  }
};

}  // namespace

const ModelFamily& llama_family() {
  static const LlamaFamily family;
  return family;
}

}  // namespace autotrain::model
