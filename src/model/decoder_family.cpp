// The families on the Llama-style decoder: their units, hook order, FLOPs and common keys.
// Tensors (Hugging Face names; torch.nn.Linear weights are [out, in]), in buffer order:
//   unit 0       model.embed_tokens.weight [Vp, C] (rows >= V zero)
//   unit 1 + l   model.layers.{l}.input_layernorm.weight [C]
//                .self_attn.q_proj.weight [NH·D, C], .k_proj.weight [NKV·D, C], .v_proj.weight
//                [NKV·D, C] (one after the other: one gemm computes q|k|v; Phi-3: one
//                .self_attn.qkv_proj.weight), their biases (qkv_bias), .self_attn.q_norm.weight,
//                .k_norm.weight [D] (qk_norm), .self_attn.o_proj.weight [C, NH·D], .o_proj.bias
//                [C] (o_bias), .post_attention_layernorm.weight [C], .mlp.gate_proj.weight
//                [I, C], .mlp.up_proj.weight [I, C] (one gemm: gate|up; Phi-3: one
//                .mlp.gate_up_proj.weight), their biases (mlp_bias), .mlp.down_proj.weight [C, I],
//                .down_proj.bias [C]; sandwich_norms (Gemma): .post_attention_layernorm.weight is
//                the attention output's norm, .pre_feedforward_layernorm.weight the MLP's input's,
//                .post_feedforward_layernorm.weight the MLP output's
//   unit L + 1   model.norm.weight [C], lm_head.weight [Vp, C] (untied only), or with
//                score_head score.weight [1, C] (tied or not)
// From scratch: weights normal(0, 0.02) (transformers' initializer_range), biases 0, norms 1
// (norm_offset: 0, which is 1).
// Hook order: forward 0, 1..L, L+1 (and 0 again for a tied LM head); backward L+1 (or 0 then L+1
// when the LM head is tied), L..1; unit 0's embedding gradient needs no parameters.
#include "decoder_family.hpp"

#include <cmath>

#include "autotrain/core/error.hpp"
#include "autotrain/core/strings.hpp"

namespace autotrain::model {
namespace {

const InitRule kNormal{InitRule::normal, 0.02};
const InitRule kZero{InitRule::zero};
const InitRule kOne{InitRule::one};

// A projection of `rows` outputs: the fused tensor, or the parts one after the other (the role
// on the first).
void projection(std::vector<TensorSpec>& t, const std::string& fused,
                const std::vector<std::pair<std::string, std::int64_t>>& parts, std::int64_t in,
                Role role, bool use_fused) {
  if (use_fused) {
    std::int64_t rows = 0;
    for (const auto& part : parts) rows += part.second;
    t.push_back({fused, {rows, in}, kNormal, true, -1, role});
    return;
  }
  for (std::size_t i = 0; i < parts.size(); ++i) {
    t.push_back(
        {parts[i].first, {parts[i].second, in}, kNormal, true, -1, i == 0 ? role : Role::none});
  }
}

// YaRN, as transformers reads it: factor is required, but where rope_scaling gives
// original_max_position_embeddings (the context the model was trained on) the factor is
// max_position_embeddings / original_max_position_embeddings instead; attention_factor given, or
// mscale(factor, mscale) / mscale(factor, mscale_all_dim) where both are given, or mscale(factor),
// mscale(s, m) = 0.1 · m · ln(s) + 1 (1 for s <= 1).
RopeScaling read_yarn(const HfConfig& config, const HfConfig& rope, const nlohmann::json& json) {
  RopeScaling scaling;
  scaling.type = "yarn";
  const int positions = config.integer("max_position_embeddings");
  AT_CHECK(rope.has("factor"), config.file(), ": rope_scaling ", json.dump(),
           " has no factor (yarn needs one)");
  scaling.factor = rope.number_or("factor", 1);
  scaling.original_max_position_embeddings = positions;
  if (rope.has("original_max_position_embeddings")) {
    scaling.original_max_position_embeddings = rope.integer("original_max_position_embeddings");
    scaling.factor = double(positions) / scaling.original_max_position_embeddings;
  }
  const auto mscale = [&](double m) {
    return scaling.factor <= 1 ? 1.0 : 0.1 * m * std::log(scaling.factor) + 1;
  };
  const double m = rope.number_or("mscale", 0), m_all = rope.number_or("mscale_all_dim", 0);
  scaling.attention_factor = rope.number_or(
      "attention_factor", m != 0 && m_all != 0 ? mscale(m) / mscale(m_all) : mscale(1));
  scaling.beta_fast = rope.number_or("beta_fast", 32);
  scaling.beta_slow = rope.number_or("beta_slow", 1);
  scaling.truncate = rope.bool_or("truncate", true);
  AT_CHECK(scaling.factor > 0 && scaling.attention_factor > 0 && scaling.beta_slow > 0 &&
               scaling.beta_fast > scaling.beta_slow,
           config.file(), ": rope_scaling ", json.dump(),
           " is not valid (expected factor > 0, attention_factor > 0, beta_fast > beta_slow > 0)");
  return scaling;
}

RopeScaling read_rope_scaling(const HfConfig& config, int rotary_dim) {
  RopeScaling scaling;
  if (!config.has("rope_scaling")) return scaling;
  const auto& json = config.json()["rope_scaling"];
  AT_CHECK(json.is_object(), config.file(), ": rope_scaling should be null or an object, got ",
           json.dump());
  const HfConfig rope(json, config.file() + ": rope_scaling");
  const std::string type = rope.string_or("rope_type", rope.string_or("type", "default"));
  if (type == "default") return scaling;
  if (type == "yarn") return read_yarn(config, rope, json);
  scaling.type = type;
  if (type == "longrope") {
    // Phi-3's: the context it was trained on is config.json's original_max_position_embeddings,
    // and factor the ratio of max_position_embeddings to it (transformers does the same).
    const int positions = config.integer("max_position_embeddings");
    const bool top = config.has("original_max_position_embeddings");
    scaling.original_max_position_embeddings =
        top ? config.integer("original_max_position_embeddings")
            : rope.integer_or("original_max_position_embeddings", positions);
    scaling.factor = top ? double(positions) / scaling.original_max_position_embeddings
                         : rope.number_or("factor", 1);
    scaling.attention_factor =
        rope.number_or("attention_factor",
                       scaling.factor <= 1
                           ? 1.0
                           : std::sqrt(1 + std::log(scaling.factor) /
                                               std::log(scaling.original_max_position_embeddings)));
    const auto factors = [&](const char* key) {
      AT_CHECK(json.contains(key) && json[key].is_array() &&
                   json[key].size() == std::size_t(rotary_dim / 2),
               config.file(), ": rope_scaling.", key, " should be a list of ", rotary_dim / 2,
               " numbers (rotary dimensions / 2)");
      std::vector<double> values;
      for (const auto& v : json[key]) {
        AT_CHECK(v.is_number() && v.get<double>() > 0, config.file(), ": rope_scaling.", key,
                 " holds ", v.dump(), " (expected positive numbers)");
        values.push_back(v.get<double>());
      }
      return values;
    };
    scaling.short_factor = factors("short_factor");
    scaling.long_factor = factors("long_factor");
    return scaling;
  }
  if (type == "linear") {
    scaling.factor = rope.number_or("factor", 1);
    AT_CHECK(scaling.factor > 0, config.file(), ": rope_scaling ", json.dump(),
             " is not valid (expected factor > 0)");
    return scaling;
  }
  if (type != "llama3") {
    throw Error(cat(config.file(), ": rope_scaling type \"", type,
                    "\" is not supported (expected none, \"default\", \"linear\", \"llama3\", "
                    "\"longrope\" or \"yarn\")"));
  }
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

// `positions`: max_position_embeddings, which yarn's original_max_position_embeddings rescales.
nlohmann::ordered_json rope_scaling_json(const RopeScaling& s, int positions) {
  if (s.type.empty()) return nullptr;
  if (s.type == "yarn") {
    // The factor in effect; original_max_position_embeddings only where it differs from
    // max_position_embeddings (transformers derives the factor from it when it is there).
    nlohmann::ordered_json json = {{"rope_type", "yarn"},
                                   {"factor", s.factor},
                                   {"attention_factor", s.attention_factor},
                                   {"beta_fast", s.beta_fast},
                                   {"beta_slow", s.beta_slow},
                                   {"truncate", s.truncate}};
    if (s.original_max_position_embeddings != positions) {
      json["original_max_position_embeddings"] = s.original_max_position_embeddings;
    }
    return json;
  }
  if (s.type == "linear") return {{"rope_type", "linear"}, {"factor", s.factor}};
  if (s.type == "longrope") {
    return {{"type", "longrope"},
            {"short_factor", s.short_factor},
            {"long_factor", s.long_factor},
            {"attention_factor", s.attention_factor}};
  }
  return {{"rope_type", s.type},
          {"factor", s.factor},
          {"low_freq_factor", s.low_freq_factor},
          {"high_freq_factor", s.high_freq_factor},
          {"original_max_position_embeddings", s.original_max_position_embeddings}};
}

}  // namespace

std::vector<UnitSpec> DecoderFamily::units(const ModelConfig& c) const {
  const std::int64_t C = c.n_embd, I = c.mlp_size(), D = c.head_size();
  const std::int64_t Q = c.q_size(), KV = c.kv_size();
  const bool fused = fused_projections();
  const InitRule norm = c.norm_offset ? kZero : kOne;  // Gemma's store weight - 1
  std::vector<UnitSpec> units;
  units.push_back({"embeddings",
                   {{"model.embed_tokens.weight",
                     {c.padded_vocab_size, C},
                     kNormal,
                     true,
                     c.vocab_size,
                     Role::embed}}});
  for (int l = 0; l < c.n_layer; ++l) {
    const std::string p = cat("model.layers.", l, ".");
    const std::string a = p + "self_attn.", m = p + "mlp.";
    UnitSpec unit{cat("h.", l),
                  {{p + "input_layernorm.weight", {C}, norm, false, -1, Role::norm1}}};
    auto& t = unit.tensors;
    projection(t, a + "qkv_proj.weight",
               {{a + "q_proj.weight", Q}, {a + "k_proj.weight", KV}, {a + "v_proj.weight", KV}}, C,
               Role::qkv, fused);
    if (c.qkv_bias) {
      t.push_back({a + "q_proj.bias", {Q}, kZero, false, -1, Role::qkv_bias});
      t.push_back({a + "k_proj.bias", {KV}, kZero});
      t.push_back({a + "v_proj.bias", {KV}, kZero});
    }
    if (c.qk_norm) {
      t.push_back({a + "q_norm.weight", {D}, norm, false, -1, Role::q_norm});
      t.push_back({a + "k_norm.weight", {D}, norm, false, -1, Role::k_norm});
    }
    t.push_back({a + "o_proj.weight", {C, Q}, kNormal, true, -1, Role::o});
    if (c.o_bias) t.push_back({a + "o_proj.bias", {C}, kZero, false, -1, Role::o_bias});
    if (c.sandwich_norms) {  // Gemma's names: the pre-MLP norm is pre_feedforward_layernorm
      t.push_back(
          {p + "post_attention_layernorm.weight", {C}, norm, false, -1, Role::post_attn_norm});
      t.push_back({p + "pre_feedforward_layernorm.weight", {C}, norm, false, -1, Role::norm2});
      t.push_back(
          {p + "post_feedforward_layernorm.weight", {C}, norm, false, -1, Role::post_mlp_norm});
    } else {
      t.push_back({p + "post_attention_layernorm.weight", {C}, norm, false, -1, Role::norm2});
    }
    projection(t, m + "gate_up_proj.weight",
               {{m + "gate_proj.weight", I}, {m + "up_proj.weight", I}}, C, Role::gate_up, fused);
    if (c.mlp_bias) {
      t.push_back({m + "gate_proj.bias", {I}, kZero, false, -1, Role::gate_up_bias});
      t.push_back({m + "up_proj.bias", {I}, kZero});
    }
    t.push_back({m + "down_proj.weight", {C, I}, kNormal, true, -1, Role::down});
    if (c.mlp_bias) t.push_back({m + "down_proj.bias", {C}, kZero, false, -1, Role::down_bias});
    units.push_back(std::move(unit));
  }
  UnitSpec last{"norm", {{"model.norm.weight", {C}, norm, false, -1, Role::final_norm}}};
  if (c.score_head) {
    last.tensors.push_back(score_tensor(c));
  } else if (!c.tie_word_embeddings) {
    last.tensors.push_back(
        {"lm_head.weight", {c.padded_vocab_size, C}, kNormal, true, c.vocab_size, Role::head});
  }
  units.push_back(std::move(last));
  return units;
}

HookOrder DecoderFamily::hook_order(const ModelConfig& c) const {
  HookOrder order;
  const int last = c.n_layer + 1;
  const bool tied_head = c.head_unit() == 0;
  for (int u = 0; u <= last; ++u) order.inference.push_back(u);
  if (tied_head) order.inference.push_back(0);
  order.training = order.inference;
  if (tied_head) order.training.push_back(0);  // backward through the LM head
  for (int u = last; u >= 1; --u) order.training.push_back(u);
  return order;
}

// 6N' + 6·L·(NH·D)·T: N' leaves out embeddings that are not a head (a lookup, not a matmul).
double DecoderFamily::flops_per_token(const ModelConfig& c, std::size_t parameters, int T) const {
  double matmul_parameters = static_cast<double>(parameters);
  if (c.head_unit() != 0) matmul_parameters -= double(c.vocab_size) * c.n_embd;
  return 6.0 * matmul_parameters + 6.0 * c.n_layer * c.q_size() * double(T);
}

bool DecoderFamily::ignored_file_tensor(const ModelConfig& c, std::string_view name) const {
  // Old Llama checkpoints keep the rotary tables as buffers; some tied models save the LM head
  // anyway; a score head replaces the base model's.
  return name.ends_with(".self_attn.rotary_emb.inv_freq") ||
         ((c.tie_word_embeddings || c.score_head) && name == "lm_head.weight");
}

ModelConfig DecoderFamily::read_common(const HfConfig& config, std::string_view architecture,
                                       double default_rope_theta) {
  const std::string& file = config.file();
  ModelConfig c;
  c.family = Family::llama;
  c.architecture = std::string(architecture);
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
  c.norm_eps = config.number_or("rms_norm_eps", 1e-6);
  AT_CHECK(std::isfinite(c.norm_eps) && c.norm_eps > 0 && c.norm_eps < 1, file, ": rms_norm_eps ",
           c.norm_eps, " is out of range (expected a number in (0, 1), such as 1e-5 or 1e-6)");
  c.rope_theta = config.number_or("rope_theta", default_rope_theta);
  AT_CHECK(std::isfinite(c.rope_theta) && c.rope_theta > 1, file, ": rope_theta ", c.rope_theta,
           " is out of range (expected a number above 1, such as 10000 or 500000)");
  if (config.has("partial_rotary_factor")) {
    const double factor = config.number_or("partial_rotary_factor", 1);
    const double dims = factor * c.head_dim;
    AT_CHECK(factor > 0 && factor <= 1 && static_cast<int>(dims) % 2 == 0 && dims >= 2, file,
             ": partial_rotary_factor ", factor,
             " is not supported (expected a number in (0, 1] "
             "that leaves an even number of rotary dimensions of head_dim ",
             c.head_dim, ")");
    c.rotary_dim = static_cast<int>(dims);
  }
  c.rope_scaling = read_rope_scaling(config, c.rotary_size());
  // The MLP's gate: hidden_activation (Gemma's name), or hidden_act.
  const char* act = config.has("hidden_activation") ? "hidden_activation" : "hidden_act";
  config.expect_one_of(act, {"silu", "gelu_pytorch_tanh"});
  if (config.string_or(act, "silu") == "gelu_pytorch_tanh") c.gate = GateActivation::gelu_tanh;
  return c;
}

nlohmann::ordered_json DecoderFamily::write_common(const ModelConfig& c,
                                                   std::string_view model_type) {
  nlohmann::ordered_json json = {
      {"architectures", {c.architecture}},
      {"model_type", model_type},
      {"vocab_size", c.vocab_size},
      {"hidden_size", c.n_embd},
      {"intermediate_size", c.mlp_size()},
      {"num_hidden_layers", c.n_layer},
      {"num_attention_heads", c.n_head},
      {"num_key_value_heads", c.kv_heads()},
      {"head_dim", c.head_size()},
      {"hidden_act", c.gate == GateActivation::silu ? "silu" : "gelu_pytorch_tanh"},
      {"max_position_embeddings", c.block_size},
      {"rms_norm_eps", c.norm_eps},
      {"rope_theta", c.rope_theta},
      {"tie_word_embeddings", c.tie_word_embeddings}};
  json["rope_scaling"] = rope_scaling_json(c.rope_scaling, c.block_size);
  return json;
}

}  // namespace autotrain::model
