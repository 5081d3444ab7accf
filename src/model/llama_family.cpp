// The Llama family: LlamaForCausalLM (Llama 2, 3, 3.1 with llama3 rope scaling, 3.2 with tied
// embeddings, TinyLlama, SmolLM), MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM.
// Pre-RMSNorm blocks without positions in the embeddings: rotary embeddings on q and k in the
// Hugging Face convention (dimension i pairs with i + D/2), grouped key/value heads (NKV divides
// NH) of D = head_dim, a SwiGLU MLP of intermediate_size I, a final RMSNorm and an LM head
// (untied, or the embeddings). Qwen2 adds q/k/v biases, Qwen3 a per-head RMSNorm of q and k
// before the rotation and an explicit head_dim; Llama's attention_bias / mlp_bias add biases.
//
// Tensors (Hugging Face names; torch.nn.Linear weights are [out, in]), in buffer order:
//   unit 0       model.embed_tokens.weight [Vp, C] (rows >= V zero)
//   unit 1 + l   model.layers.{l}.input_layernorm.weight [C]
//                .self_attn.q_proj.weight [NH·D, C], .k_proj.weight [NKV·D, C], .v_proj.weight
//                [NKV·D, C] (one after the other: one gemm computes q|k|v), their biases
//                (qkv_bias), .self_attn.q_norm.weight, .k_norm.weight [D] (qk_norm),
//                .self_attn.o_proj.weight [C, NH·D], .o_proj.bias [C] (o_bias),
//                .post_attention_layernorm.weight [C],
//                .mlp.gate_proj.weight [I, C], .mlp.up_proj.weight [I, C] (one gemm: gate|up),
//                their biases (mlp_bias), .mlp.down_proj.weight [C, I], .down_proj.bias [C]
//   unit L + 1   model.norm.weight [C], lm_head.weight [Vp, C] (untied only)
// From scratch: weights normal(0, 0.02) (transformers' initializer_range), biases 0, norms 1.
// Hook order: forward 0, 1..L, L+1 (and 0 again for a tied LM head); backward L+1 (or 0 then L+1
// when tied), L..1; unit 0's embedding gradient needs no parameters. The model: llama.cpp.
#include <cmath>

#include "autotrain/core/error.hpp"
#include "autotrain/core/strings.hpp"
#include "autotrain/model/family.hpp"
#include "family_json.hpp"

namespace autotrain::model {
namespace {

struct Architecture {
  const char* model_type;
  const char* name;
  bool qkv_bias;         // Qwen2's, always
  double rope_theta;     // the default when config.json has none
  bool sliding_by_flag;  // Qwen: sliding_window applies only with use_sliding_window
};
constexpr Architecture kArchitectures[] = {
    {"llama", "LlamaForCausalLM", false, 10000, false},
    {"mistral", "MistralForCausalLM", false, 10000, false},
    {"qwen2", "Qwen2ForCausalLM", true, 10000, true},
    {"qwen3", "Qwen3ForCausalLM", false, 10000, true},
};

const Architecture& architecture(const std::string& model_type) {
  for (const auto& a : kArchitectures) {
    if (model_type == a.model_type) return a;
  }
  throw Error(cat("model_type ", model_type, " is not of the Llama family"));
}

RopeScaling read_rope_scaling(const HfConfig& config) {
  RopeScaling scaling;
  if (!config.has("rope_scaling")) return scaling;
  const auto& json = config.json()["rope_scaling"];
  AT_CHECK(json.is_object(), config.file(), ": rope_scaling should be null or an object, got ",
           json.dump());
  const HfConfig rope(json, config.file() + ": rope_scaling");
  const std::string type = rope.string_or("rope_type", rope.string_or("type", "default"));
  if (type == "default") return scaling;
  if (type != "llama3") {
    throw Error(cat(config.file(), ": rope_scaling type \"", type,
                    "\" is not supported (expected none, \"default\" or \"llama3\")"));
  }
  scaling.type = type;
  scaling.factor = rope.number_or("factor", 8);
  scaling.low_freq_factor = rope.number_or("low_freq_factor", 1);
  scaling.high_freq_factor = rope.number_or("high_freq_factor", 4);
  scaling.original_max_position_embeddings = rope.integer("original_max_position_embeddings");
  AT_CHECK(scaling.factor > 0 && scaling.high_freq_factor > scaling.low_freq_factor &&
               scaling.low_freq_factor > 0,
           config.file(), ": rope_scaling ", json.dump(),
           " is not valid (expected factor > 0, high_freq_factor > low_freq_factor > 0)");
  return scaling;
}

class LlamaFamily final : public ModelFamily {
 public:
  Family family() const override { return Family::llama; }
  std::string describe(const ModelConfig& c) const override {
    return cat("Llama family (", c.architecture, ")");
  }

  std::vector<UnitSpec> units(const ModelConfig& c) const override {
    const std::int64_t C = c.n_embd, I = c.mlp_size(), D = c.head_size();
    const std::int64_t Q = c.q_size(), KV = c.kv_size();
    const InitRule normal{InitRule::normal, 0.02};
    const InitRule zero{InitRule::zero}, one{InitRule::one};
    std::vector<UnitSpec> units;
    units.push_back(
        {"embeddings",
         {{"model.embed_tokens.weight", {c.padded_vocab_size, C}, normal, true, c.vocab_size}}});
    for (int l = 0; l < c.n_layer; ++l) {
      const std::string p = cat("model.layers.", l, ".");
      UnitSpec unit{cat("h.", l), {{p + "input_layernorm.weight", {C}, one}}};
      auto& t = unit.tensors;
      t.push_back({p + "self_attn.q_proj.weight", {Q, C}, normal, true});
      t.push_back({p + "self_attn.k_proj.weight", {KV, C}, normal, true});
      t.push_back({p + "self_attn.v_proj.weight", {KV, C}, normal, true});
      if (c.qkv_bias) {
        t.push_back({p + "self_attn.q_proj.bias", {Q}, zero});
        t.push_back({p + "self_attn.k_proj.bias", {KV}, zero});
        t.push_back({p + "self_attn.v_proj.bias", {KV}, zero});
      }
      if (c.qk_norm) {
        t.push_back({p + "self_attn.q_norm.weight", {D}, one});
        t.push_back({p + "self_attn.k_norm.weight", {D}, one});
      }
      t.push_back({p + "self_attn.o_proj.weight", {C, Q}, normal, true});
      if (c.o_bias) t.push_back({p + "self_attn.o_proj.bias", {C}, zero});
      t.push_back({p + "post_attention_layernorm.weight", {C}, one});
      t.push_back({p + "mlp.gate_proj.weight", {I, C}, normal, true});
      t.push_back({p + "mlp.up_proj.weight", {I, C}, normal, true});
      if (c.mlp_bias) {
        t.push_back({p + "mlp.gate_proj.bias", {I}, zero});
        t.push_back({p + "mlp.up_proj.bias", {I}, zero});
      }
      t.push_back({p + "mlp.down_proj.weight", {C, I}, normal, true});
      if (c.mlp_bias) t.push_back({p + "mlp.down_proj.bias", {C}, zero});
      units.push_back(std::move(unit));
    }
    UnitSpec last{"norm", {{"model.norm.weight", {C}, one}}};
    if (!c.tie_word_embeddings) {
      last.tensors.push_back(
          {"lm_head.weight", {c.padded_vocab_size, C}, normal, true, c.vocab_size});
    }
    units.push_back(std::move(last));
    return units;
  }

  HookOrder hook_order(const ModelConfig& c) const override {
    HookOrder order;
    const int last = c.n_layer + 1;
    for (int u = 0; u <= last; ++u) order.inference.push_back(u);
    if (c.tie_word_embeddings) order.inference.push_back(0);
    order.training = order.inference;
    if (c.tie_word_embeddings) order.training.push_back(0);  // backward through the LM head
    for (int u = last; u >= 1; --u) order.training.push_back(u);
    return order;
  }

  // 6N' + 6·L·(NH·D)·T: N' leaves out untied embeddings (a lookup, not a matmul).
  double flops_per_token(const ModelConfig& c, std::size_t parameters, int T) const override {
    double matmul_parameters = static_cast<double>(parameters);
    if (!c.tie_word_embeddings) matmul_parameters -= double(c.vocab_size) * c.n_embd;
    return 6.0 * matmul_parameters + 6.0 * c.n_layer * c.q_size() * double(T);
  }

  ModelConfig from_hf_config(const nlohmann::json& json, const std::string& file) const override {
    const HfConfig config(json, file);
    const Architecture& arch = architecture(json["model_type"].get<std::string>());
    config.expect_architecture(arch.name);
    ModelConfig c;
    c.family = Family::llama;
    c.architecture = arch.name;
    c.n_layer = config.integer("num_hidden_layers");
    c.n_head = config.integer("num_attention_heads");
    c.n_embd = config.integer("hidden_size");
    c.n_kv_head = config.integer_or("num_key_value_heads", c.n_head);
    AT_CHECK(c.n_head % c.n_kv_head == 0, file, ": num_attention_heads ", c.n_head,
             " is not a multiple of num_key_value_heads ", c.n_kv_head);
    if (!config.has("head_dim")) {
      AT_CHECK(c.n_embd % c.n_head == 0, file, ": hidden_size ", c.n_embd,
               " is not a multiple of num_attention_heads ", c.n_head, " and there is no head_dim");
    }
    c.head_dim = config.integer_or("head_dim", c.n_embd / c.n_head);
    c.intermediate_size = config.integer("intermediate_size");
    c.vocab_size = config.integer("vocab_size");
    c.padded_vocab_size = round_up_vocab(c.vocab_size);
    c.block_size = config.integer("max_position_embeddings");
    c.tie_word_embeddings = config.bool_or("tie_word_embeddings", false);
    const bool attention_bias = config.bool_or("attention_bias", false);
    c.qkv_bias = arch.qkv_bias || attention_bias;
    c.o_bias = attention_bias;
    c.mlp_bias = config.bool_or("mlp_bias", false);
    c.qk_norm = std::string(arch.model_type) == "qwen3";
    c.norm_eps = config.number_or("rms_norm_eps", 1e-6);
    AT_CHECK(std::isfinite(c.norm_eps) && c.norm_eps > 0 && c.norm_eps < 1, file, ": rms_norm_eps ",
             c.norm_eps, " is out of range (expected a number in (0, 1), such as 1e-5 or 1e-6)");
    c.rope_theta = config.number_or("rope_theta", arch.rope_theta);
    AT_CHECK(std::isfinite(c.rope_theta) && c.rope_theta > 1, file, ": rope_theta ", c.rope_theta,
             " is out of range (expected a number above 1, such as 10000 or 500000)");
    c.rope_scaling = read_rope_scaling(config);
    config.expect_one_of("hidden_act", {"silu"});
    const bool sliding = !arch.sliding_by_flag || config.bool_or("use_sliding_window", false);
    if (sliding && config.has("sliding_window")) {
      c.sliding_window = config.integer("sliding_window");
    }
    c.validate();
    return c;
  }

  nlohmann::ordered_json hf_config(const ModelConfig& c) const override {
    const Architecture* arch = nullptr;
    for (const auto& a : kArchitectures) {
      if (c.architecture == a.name) arch = &a;
    }
    AT_CHECK(arch != nullptr, "model config: architecture ", c.architecture,
             " is not of the Llama family");
    nlohmann::ordered_json json = {{"architectures", {c.architecture}},
                                   {"model_type", arch->model_type},
                                   {"vocab_size", c.vocab_size},
                                   {"hidden_size", c.n_embd},
                                   {"intermediate_size", c.mlp_size()},
                                   {"num_hidden_layers", c.n_layer},
                                   {"num_attention_heads", c.n_head},
                                   {"num_key_value_heads", c.kv_heads()},
                                   {"head_dim", c.head_size()},
                                   {"hidden_act", "silu"},
                                   {"max_position_embeddings", c.block_size},
                                   {"rms_norm_eps", c.norm_eps},
                                   {"rope_theta", c.rope_theta},
                                   {"tie_word_embeddings", c.tie_word_embeddings},
                                   {"attention_bias", c.o_bias},
                                   {"attention_dropout", 0.0}};
    if (std::string(arch->model_type) == "llama") json["mlp_bias"] = c.mlp_bias;
    if (c.rope_scaling.type.empty()) {
      json["rope_scaling"] = nullptr;
    } else {
      json["rope_scaling"] = {
          {"rope_type", c.rope_scaling.type},
          {"factor", c.rope_scaling.factor},
          {"low_freq_factor", c.rope_scaling.low_freq_factor},
          {"high_freq_factor", c.rope_scaling.high_freq_factor},
          {"original_max_position_embeddings", c.rope_scaling.original_max_position_embeddings}};
    }
    if (c.sliding_window > 0) json["sliding_window"] = c.sliding_window;
    if (arch->sliding_by_flag) json["use_sliding_window"] = c.sliding_window > 0;
    if (c.sliding_window == 0 && !arch->sliding_by_flag) json["sliding_window"] = nullptr;
    return json;
  }

  bool ignored_file_tensor(const ModelConfig& c, std::string_view name) const override {
    // Old Llama checkpoints keep the rotary tables as buffers; some tied models save the LM
    // head anyway.
    return name.ends_with(".self_attn.rotary_emb.inv_freq") ||
           (c.tie_word_embeddings && name == "lm_head.weight");
  }
};

}  // namespace

const ModelFamily& llama_family() {
  static const LlamaFamily family;
  return family;
}

}  // namespace autotrain::model
