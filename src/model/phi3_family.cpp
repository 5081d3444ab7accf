// Phi-3 and Phi-4-mini (Phi3ForCausalLM, model_type phi3) on the Llama-style decoder: the same
// pre-RMSNorm blocks, GQA attention with rotary embeddings and SwiGLU MLP, with q|k|v in one
// fused qkv_proj and gate|up in one gate_up_proj (the buffer layout the decoder reads anyway),
// rotary embeddings on the first partial_rotary_factor · head_dim dimensions of each head
// (Phi-4-mini: 0.75), Phi-3's "longrope" rope_scaling (short_factor within
// original_max_position_embeddings), no biases, a tied or untied head, and a sliding_window
// that, as Mistral's, limits the sequence length (model/config.hpp).
// Tensors, init and hook order: decoder_family.cpp. The model: llama.cpp.
#include <string>

#include "autotrain/core/error.hpp"
#include "decoder_family.hpp"

namespace autotrain::model {
namespace {

constexpr std::string_view kModelType = "phi3";
constexpr std::string_view kArchitecture = "Phi3ForCausalLM";
constexpr std::string_view kClassifier = "Phi3ForSequenceClassification";

class Phi3Family final : public DecoderFamily {
 public:
  std::vector<HfArchitecture> architectures() const override {
    return {{kModelType, kArchitecture, kClassifier}};
  }
  std::string describe(const ModelConfig& c) const override {
    return cat("Phi-3 (", c.architecture, ")");
  }

  ModelConfig from_hf_config(const nlohmann::json& json, const std::string& file) const override {
    const HfConfig config(json, file);
    config.expect_architecture(kArchitecture);
    // Phi3Config has no head_dim: hidden_size / num_attention_heads, whatever a file says.
    config.expect_number(
        "head_dim", double(config.integer("hidden_size") / config.integer("num_attention_heads")));
    ModelConfig c = read_common(config, kArchitecture, 10000);
    c.norm_eps = config.number_or("rms_norm_eps", 1e-5);
    // The rotary dimensions: all of the head unless partial_rotary_factor says otherwise.
    if (c.rotary_dim == 0) c.rotary_dim = c.head_size();
    if (config.has("sliding_window")) c.sliding_window = config.integer("sliding_window");
    c.validate();
    return c;
  }

  nlohmann::ordered_json hf_config(const ModelConfig& c) const override {
    nlohmann::ordered_json json = write_common(c, kModelType);
    json.erase("head_dim");
    json["partial_rotary_factor"] = double(c.rotary_size()) / c.head_size();
    if (c.rope_scaling.type == "longrope") {
      json["original_max_position_embeddings"] = c.rope_scaling.original_max_position_embeddings;
    }
    json["sliding_window"] = c.sliding_window > 0 ? nlohmann::ordered_json(c.sliding_window)
                                                  : nlohmann::ordered_json(nullptr);
    json["attention_dropout"] = 0.0;
    json["resid_pdrop"] = 0.0;
    json["embd_pdrop"] = 0.0;
    return json;
  }

 protected:
  bool fused_projections() const override { return true; }
};

}  // namespace

const ModelFamily& phi3_family() {
  static const Phi3Family family;
  return family;
}

}  // namespace autotrain::model
