#pragma once
// The shape of a model of one of the families of model/family.hpp: GPT-2, or one on the
// Llama-style decoder (Llama, Mistral, Qwen2, Qwen3, Phi-3, Gemma 1, 2 and 3). Kept apart from the
// config layer's TrainingParams so the model can be built and tested on its own. The Llama family's
// fields keep GPT-2's meaning there: GPT-2 has as many key/value heads as heads, head_dim = n_embd
// / n_head and an MLP of 4·n_embd.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "autotrain/kernels/swiglu.hpp"

namespace autotrain::model {

// The model code a family runs (model/family.hpp): GPT-2's, or the Llama-style decoder.
enum class Family { gpt2, llama };

// The gated MLP's gate (kernels/swiglu.hpp): SwiGLU's silu, or GeGLU's gelu_tanh (Gemma's).
using kernels::GateActivation;

// rope_scaling of config.json: none (type empty), "linear" (every inverse frequency divided by
// factor; Gemma 3's global layers), Llama 3.1's "llama3" frequency bands, or
// Phi-3's "longrope": inverse frequencies divided by a factor per dimension (short_factor for
// sequences within original_max_position_embeddings, long_factor beyond, which autotrain does
// not run yet) and cos/sin multiplied by attention_factor; or "yarn" (YaRN, Qwen's long
// context): the dimensions that turn fewer than beta_slow times in the original context divided
// by factor, those that turn more than beta_fast times kept, a linear ramp between, and cos/sin
// multiplied by attention_factor.
struct RopeScaling {
  std::string type;  // "", "linear", "llama3", "longrope" or "yarn"
  double factor = 1;
  double low_freq_factor = 1;
  double high_freq_factor = 4;
  int original_max_position_embeddings = 8192;
  std::vector<double> short_factor, long_factor;  // longrope: [rotary dims / 2] each
  double attention_factor = 1;                    // longrope, yarn
  double beta_fast = 32, beta_slow = 1;           // yarn: the ramp's ends, in turns
  bool truncate = true;                           // yarn: the ramp's ends rounded outwards
  bool operator==(const RopeScaling&) const = default;
};

struct ModelConfig {
  Family family = Family::gpt2;
  std::string architecture = "GPT2LMHeadModel";  // config.json's architectures[0]
  int n_layer = 12;
  int n_head = 12;
  int n_embd = 768;
  // The longest sequence: GPT-2's n_positions (rows of wpe), the Llama family's
  // max_position_embeddings (no weights depend on it).
  int block_size = 1024;
  int vocab_size = 50257;         // V: real tokens
  int padded_vocab_size = 50304;  // Vp >= V: rows of the embeddings, a multiple of 128 for gemm

  // The Llama family (0 = GPT-2's value).
  int n_kv_head = 0;                // key/value heads (GQA); n_head divides by it
  int head_dim = 0;                 // Qwen3 may set one that is not n_embd / n_head
  int intermediate_size = 0;        // the SwiGLU MLP's width
  bool tie_word_embeddings = true;  // the LM head is the embeddings (GPT-2 always)
  bool qkv_bias = false;            // q/k/v_proj biases (Qwen2; Llama's attention_bias)
  bool o_bias = false;              // o_proj bias (Llama's attention_bias)
  bool mlp_bias = false;            // gate/up/down_proj biases
  bool qk_norm = false;             // Qwen3's per-head RMSNorm of q and k before the rotation
  double norm_eps = 1e-5;           // layer_norm_epsilon / rms_norm_eps
  double rope_theta = 10000;
  // Dimensions of each head that rotate (the first ones; Phi's partial_rotary_factor · head_dim);
  // 0: all of them.
  int rotary_dim = 0;
  RopeScaling rope_scaling;
  // Mistral's (and Qwen's, when use_sliding_window) attention window: position t sees t2 where
  // t - sliding_window < t2 <= t; 0: none.
  int sliding_window = 0;
  // The layers that attend over the window (Gemma's local layers, alternating with global ones);
  // empty: every layer.
  std::vector<bool> sliding_layers;

  // Gemma's departures from the Llama block (model/gemma_family.cpp); the defaults are Llama's.
  GateActivation gate = GateActivation::silu;
  bool norm_offset = false;          // every RMSNorm scales by 1 + weight (weights stored from 1)
  bool embed_scale = false;          // the embeddings enter scaled by sqrt(n_embd)
  bool sandwich_norms = false;       // RMSNorms on the attention's and the MLP's outputs too
  double query_pre_attn_scalar = 0;  // attention scores scale by its -1/2 power; 0: head_dim's
  double attn_softcap = 0;           // attn_logit_softcapping; 0: none
  double final_softcap = 0;          // final_logit_softcapping; 0: none
  // The rotary base of the sliding layers, which take no rope_scaling (Gemma 3's
  // rope_local_base_freq); 0: rope_theta, as every layer.
  double rope_local_theta = 0;

  // A sequence-classification head (a reward model: transformers' *ForSequenceClassification
  // with num_labels 1) instead of the LM head: score.weight [1, C], no bias, in the last unit
  // beside the final norm whether or not the embeddings are tied (they stay the input's). The
  // model's per-position losses are then the scores of the positions whose target is not
  // kIgnoreTarget (model/causal_lm.hpp).
  bool score_head = false;

  // A GPT-2 config with padded_vocab_size = vocab_size rounded up to a multiple of 128.
  static ModelConfig gpt2(int n_layer, int n_head, int n_embd, int block_size, int vocab_size);
  static ModelConfig gpt2_124m() { return gpt2(12, 12, 768, 1024, 50257); }

  int kv_heads() const { return n_kv_head > 0 ? n_kv_head : n_head; }
  int head_size() const { return head_dim > 0 ? head_dim : n_embd / n_head; }
  // The head's unit: the embeddings' (0) for a tied LM head, else the last (n_layer + 1).
  int head_unit() const { return tie_word_embeddings && !score_head ? 0 : n_layer + 1; }
  // The head's outputs per position: the padded vocabulary's logits, or the one score.
  int head_outputs() const { return score_head ? 1 : padded_vocab_size; }
  int mlp_size() const { return intermediate_size > 0 ? intermediate_size : 4 * n_embd; }
  int rotary_size() const { return rotary_dim > 0 ? rotary_dim : head_size(); }
  int q_size() const { return n_head * head_size(); }       // query width
  int kv_size() const { return kv_heads() * head_size(); }  // key (and value) width
  int qkv_size() const { return q_size() + 2 * kv_size(); }
  // The attention window of layer l (0: none).
  int window(int l) const {
    return sliding_layers.empty() || sliding_layers[std::size_t(l)] ? sliding_window : 0;
  }
  // Whether layer l rotates by the local tables (rope_local_theta, no scaling).
  bool local_rope(int l) const { return rope_local_theta > 0 && window(l) > 0; }
  // The positions generation keeps in its key/value cache (the window it slides): at most 4096,
  // and no more than longrope's short factors serve.
  int generation_context() const {
    int context = block_size < 4096 ? block_size : 4096;
    if (rope_scaling.type == "longrope" &&
        rope_scaling.original_max_position_embeddings < context) {
      context = rope_scaling.original_max_position_embeddings;
    }
    return context;
  }

  // Throws autotrain::Error naming the first field that is out of range.
  void validate() const;
  bool operator==(const ModelConfig&) const = default;
};

int round_up_vocab(int vocab_size, int multiple = 128);

std::string_view family_name(Family family);  // "gpt2", "llama"

// Every field, for checkpoints (what a resume must match) and back. from_json takes a
// checkpoint's document; older ones, which predate families, are GPT-2's six integers.
nlohmann::json to_json(const ModelConfig& config);
ModelConfig model_config_from_json(const nlohmann::json& json);

}  // namespace autotrain::model
