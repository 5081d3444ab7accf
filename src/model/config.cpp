#include "autotrain/model/config.hpp"

#include <cstdint>
#include <limits>

#include "autotrain/core/error.hpp"
#include "autotrain/core/json_integer.hpp"

namespace autotrain::model {

int round_up_vocab(int vocab_size, int multiple) {
  const int64_t rounded = (int64_t{vocab_size} + multiple - 1) / multiple * multiple;
  AT_CHECK(rounded <= std::numeric_limits<int>::max(), "model config: vocab_size ", vocab_size,
           " is too large (rounded up to a multiple of ", multiple, " it exceeds ",
           std::numeric_limits<int>::max(), ")");
  return static_cast<int>(rounded);
}

std::string_view family_name(Family family) {
  return family == Family::gpt2 ? "gpt2" : "llama";
}

ModelConfig ModelConfig::gpt2(int n_layer, int n_head, int n_embd, int block_size, int vocab_size) {
  ModelConfig c;
  c.n_layer = n_layer;
  c.n_head = n_head;
  c.n_embd = n_embd;
  c.block_size = block_size;
  c.vocab_size = vocab_size;
  c.padded_vocab_size = round_up_vocab(vocab_size);
  return c;
}

void ModelConfig::validate() const {
  auto positive = [](const char* field, int value) {
    AT_CHECK(value >= 1, "model config: ", field, " must be >= 1, got ", value);
  };
  positive("n_layer", n_layer);
  positive("n_head", n_head);
  positive("n_embd", n_embd);
  positive("block_size", block_size);
  positive("vocab_size", vocab_size);
  AT_CHECK(n_kv_head >= 0 && head_dim >= 0 && intermediate_size >= 0,
           "model config: n_kv_head, head_dim and intermediate_size must be >= 0 (0: the default)");
  if (head_dim == 0) {
    AT_CHECK(n_embd % n_head == 0, "model config: n_embd (", n_embd,
             ") must be divisible by n_head (", n_head, ")");
  }
  AT_CHECK(n_head % kv_heads() == 0, "model config: n_head (", n_head,
           ") must be divisible by the key/value heads (", kv_heads(), ")");
  AT_CHECK(padded_vocab_size >= vocab_size, "model config: padded_vocab_size (", padded_vocab_size,
           ") must be >= vocab_size (", vocab_size, ")");
  if (family == Family::gpt2) {
    AT_CHECK(kv_heads() == n_head && head_size() * n_head == n_embd && mlp_size() == 4 * n_embd &&
                 tie_word_embeddings,
             "model config: GPT-2 has as many key/value heads as heads, n_embd / n_head per head, "
             "an MLP of 4·n_embd and tied embeddings");
  } else {
    AT_CHECK(head_size() % 2 == 0, "model config: head_dim ", head_size(),
             " must be even (rotary embeddings pair its halves)");
    AT_CHECK(rotary_dim >= 0 && rotary_size() <= head_size() && rotary_size() % 2 == 0,
             "model config: rotary_dim ", rotary_dim, " must be even and at most head_dim ",
             head_size(), " (0: head_dim)");
    AT_CHECK(sliding_layers.empty() || sliding_layers.size() == std::size_t(n_layer),
             "model config: sliding_layers has ", sliding_layers.size(), " entries for ", n_layer,
             " layers");
    AT_CHECK(query_pre_attn_scalar >= 0 && attn_softcap >= 0 && final_softcap >= 0 &&
                 rope_local_theta >= 0 && sliding_window >= 0,
             "model config: query_pre_attn_scalar, the soft caps, rope_local_theta and "
             "sliding_window must be >= 0 (0: none)");
    if (rope_scaling.type == "longrope") {
      const auto pairs = static_cast<std::size_t>(rotary_size() / 2);
      AT_CHECK(
          rope_scaling.short_factor.size() == pairs && rope_scaling.long_factor.size() == pairs,
          "model config: longrope's short_factor and long_factor need ", pairs,
          " entries each (rotary dimensions / 2), got ", rope_scaling.short_factor.size(), " and ",
          rope_scaling.long_factor.size());
    }
  }
}

nlohmann::json to_json(const ModelConfig& c) {
  nlohmann::json json = {
      {"family", family_name(c.family)},
      {"architecture", c.architecture},
      {"n_layer", c.n_layer},
      {"n_head", c.n_head},
      {"n_embd", c.n_embd},
      {"block_size", c.block_size},
      {"vocab_size", c.vocab_size},
      {"padded_vocab_size", c.padded_vocab_size},
      {"n_kv_head", c.kv_heads()},
      {"head_dim", c.head_size()},
      {"intermediate_size", c.mlp_size()},
      {"tie_word_embeddings", c.tie_word_embeddings},
      {"qkv_bias", c.qkv_bias},
      {"o_bias", c.o_bias},
      {"mlp_bias", c.mlp_bias},
      {"qk_norm", c.qk_norm},
      {"norm_eps", c.norm_eps},
      {"rope_theta", c.rope_theta},
      {"sliding_window", c.sliding_window},
      {"rope_scaling",
       {{"type", c.rope_scaling.type},
        {"factor", c.rope_scaling.factor},
        {"low_freq_factor", c.rope_scaling.low_freq_factor},
        {"high_freq_factor", c.rope_scaling.high_freq_factor},
        {"original_max_position_embeddings", c.rope_scaling.original_max_position_embeddings}}}};
  // Written only where they are set, so that checkpoints of the other models read as before.
  if (c.rotary_dim != 0) json["rotary_dim"] = c.rotary_dim;
  if (c.rope_scaling.type == "longrope") {
    json["rope_scaling"]["short_factor"] = c.rope_scaling.short_factor;
    json["rope_scaling"]["long_factor"] = c.rope_scaling.long_factor;
    json["rope_scaling"]["attention_factor"] = c.rope_scaling.attention_factor;
  }
  if (c.rope_scaling.type == "yarn") {
    json["rope_scaling"]["attention_factor"] = c.rope_scaling.attention_factor;
    json["rope_scaling"]["beta_fast"] = c.rope_scaling.beta_fast;
    json["rope_scaling"]["beta_slow"] = c.rope_scaling.beta_slow;
    json["rope_scaling"]["truncate"] = c.rope_scaling.truncate;
  }
  if (c.gate == GateActivation::gelu_tanh) json["gate"] = "gelu_tanh";
  if (!c.sliding_layers.empty()) json["sliding_layers"] = c.sliding_layers;
  for (const auto& [key, on] : {std::pair{"norm_offset", c.norm_offset},
                                {"embed_scale", c.embed_scale},
                                {"sandwich_norms", c.sandwich_norms},
                                {"score_head", c.score_head}}) {
    if (on) json[key] = true;
  }
  for (const auto& [key, value] : {std::pair{"query_pre_attn_scalar", c.query_pre_attn_scalar},
                                   {"attn_softcap", c.attn_softcap},
                                   {"final_softcap", c.final_softcap},
                                   {"rope_local_theta", c.rope_local_theta}}) {
    if (value != 0) json[key] = value;
  }
  return json;
}

ModelConfig model_config_from_json(const nlohmann::json& j) {
  constexpr int kMax = std::numeric_limits<int>::max();
  const auto integer = [&](const char* key, int lo) {
    return json_integer<int>(j.at(key), key, lo, kMax);
  };
  ModelConfig c =
      ModelConfig::gpt2(integer("n_layer", 1), integer("n_head", 1), integer("n_embd", 1),
                        integer("block_size", 1), integer("vocab_size", 1));
  c.padded_vocab_size = integer("padded_vocab_size", 1);
  if (!j.contains("family")) return c;  // written before families: GPT-2
  const std::string family = j.at("family").get<std::string>();
  AT_CHECK(family == "gpt2" || family == "llama", "model family '", family,
           "' is not one of gpt2, llama");
  c.family = family == "gpt2" ? Family::gpt2 : Family::llama;
  c.architecture = j.at("architecture").get<std::string>();
  c.n_kv_head = integer("n_kv_head", 1);
  c.head_dim = integer("head_dim", 1);
  c.intermediate_size = integer("intermediate_size", 1);
  c.tie_word_embeddings = j.at("tie_word_embeddings").get<bool>();
  c.qkv_bias = j.at("qkv_bias").get<bool>();
  c.o_bias = j.at("o_bias").get<bool>();
  c.mlp_bias = j.at("mlp_bias").get<bool>();
  c.qk_norm = j.at("qk_norm").get<bool>();
  c.norm_eps = j.at("norm_eps").get<double>();
  c.rope_theta = j.at("rope_theta").get<double>();
  c.sliding_window = json_integer<int>(j.at("sliding_window"), "sliding_window", 0, kMax);
  const auto& rope = j.at("rope_scaling");
  c.rope_scaling.type = rope.at("type").get<std::string>();
  c.rope_scaling.factor = rope.at("factor").get<double>();
  c.rope_scaling.low_freq_factor = rope.at("low_freq_factor").get<double>();
  c.rope_scaling.high_freq_factor = rope.at("high_freq_factor").get<double>();
  c.rope_scaling.original_max_position_embeddings = json_integer<int>(
      rope.at("original_max_position_embeddings"), "original_max_position_embeddings", 1, kMax);
  if (rope.contains("short_factor")) {
    c.rope_scaling.short_factor = rope.at("short_factor").get<std::vector<double>>();
    c.rope_scaling.long_factor = rope.at("long_factor").get<std::vector<double>>();
    c.rope_scaling.attention_factor = rope.at("attention_factor").get<double>();
  }
  if (c.rope_scaling.type == "yarn") {
    c.rope_scaling.attention_factor = rope.at("attention_factor").get<double>();
    c.rope_scaling.beta_fast = rope.at("beta_fast").get<double>();
    c.rope_scaling.beta_slow = rope.at("beta_slow").get<double>();
    c.rope_scaling.truncate = rope.at("truncate").get<bool>();
  }
  if (j.contains("rotary_dim"))
    c.rotary_dim = json_integer<int>(j.at("rotary_dim"), "rotary_dim", 0, kMax);
  if (j.contains("gate")) {
    const std::string gate = j.at("gate").get<std::string>();
    AT_CHECK(gate == "gelu_tanh", "model config: gate '", gate, "' is not one of gelu_tanh");
    c.gate = GateActivation::gelu_tanh;
  }
  if (j.contains("sliding_layers"))
    c.sliding_layers = j.at("sliding_layers").get<std::vector<bool>>();
  c.norm_offset = j.value("norm_offset", false);
  c.embed_scale = j.value("embed_scale", false);
  c.sandwich_norms = j.value("sandwich_norms", false);
  c.score_head = j.value("score_head", false);
  c.query_pre_attn_scalar = j.value("query_pre_attn_scalar", 0.0);
  c.attn_softcap = j.value("attn_softcap", 0.0);
  c.final_softcap = j.value("final_softcap", 0.0);
  c.rope_local_theta = j.value("rope_local_theta", 0.0);
  if (c.family == Family::gpt2) {  // GPT-2's are the defaults: compare equal to gpt2(...)
    c.n_kv_head = c.head_dim = c.intermediate_size = 0;
  }
  return c;
}

}  // namespace autotrain::model
