#pragma once
// A model family: everything the rest of autotrain knows about an architecture, in one place.
// The trainer, the ZeRO engines, checkpoints, loading, export and generation use only this and
// the ParamLayout built from it. One file per family says what the family is, and one line of
// src/model/registry.cpp makes it known:
//   src/model/gpt2_family.cpp   GPT-2 (GPT2LMHeadModel), its model in gpt2.cpp
//   src/model/llama_family.cpp  the Llama family (Llama, Mistral, Qwen2, Qwen3), model in llama.cpp
//   src/model/phi3_family.cpp   Phi-3 and Phi-4-mini (Phi3ForCausalLM), on llama.cpp's decoder
//
// Every family has the same unit structure, which the ZeRO engines rely on:
//   unit 0        the token embeddings (and positions)
//   units 1..L    the blocks, one each
//   unit L + 1    the final norm (and an untied LM head)
// and its backward finishes the units' gradients in the order L + 1, L, ..., 1, 0 (the gradient
// buckets follow it). Which units forward and backward read, in which order, is the family's
// hook order.
//
// LoRA's adapters (model/lora.hpp) attach to the 2-D weights of the block units, by their
// TensorSpec names; recomputing a block's activations in backward is the model's business.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "autotrain/model/config.hpp"

namespace autotrain::model {

// The initial value of a tensor trained from scratch (init.hpp draws it from the seed).
struct InitRule {
  enum Kind { zero, one, normal, uniform } kind = zero;
  double std = 0;    // of `normal`
  double bound = 0;  // of `uniform`: values in [-bound, bound]
};

// What a tensor is to the model that runs it: the Llama-style block (llama.cpp, gpu/llama.cpp)
// finds its tensors by role, never by name, so families that name or fuse them differently run
// it unchanged. Tensors laid out one after the other to be read as one (Llama's q_proj, k_proj,
// v_proj: one [Q + 2·KV, C] gemm) carry the role on the first; a fused tensor (Phi-3's qkv_proj)
// on itself.
enum class Role {
  none,
  embed,     // token embeddings [Vp, C]
  norm1,     // the norm before attention
  qkv,       // q|k|v projection weights [Q + 2·KV, C]
  qkv_bias,  // their biases
  q_norm,    // per-head q and k norms [D]
  k_norm,
  o,  // attention output projection [C, Q]
  o_bias,
  norm2,    // the norm before the MLP
  gate_up,  // gate|up projection weights [2·I, C]
  gate_up_bias,
  down,  // MLP output projection [C, I]
  down_bias,
  final_norm,
  head,            // an untied LM head [Vp, C]
  post_attn_norm,  // Gemma's norms of the attention's and the MLP's outputs (sandwich_norms)
  post_mlp_norm,
  score,  // the score head [1, C] (ModelConfig::score_head), in unit L + 1
};

struct TensorSpec {
  std::string name;  // the Hugging Face name
  std::vector<std::int64_t> shape;
  InitRule init;
  bool weight_decay = false;  // matmul and embedding weights; not biases and norms
  // Rows the tensor has in Hugging Face files, when fewer than shape[0]: the padded vocabulary
  // rows of embeddings and LM heads, zero and kept zero. -1: all of them.
  std::int64_t file_rows = -1;
  Role role = Role::none;
};

struct UnitSpec {
  std::string name;  // "embeddings", "h.0", ..., "ln_f"
  std::vector<TensorSpec> tensors;
};

// The units a model asks for (UnitAccess::params), in order: a forward alone (evaluation,
// inference) and a training micro-step (forward, then backward). The stage-3 gather schedule
// prefetches along them.
struct HookOrder {
  std::vector<int> inference;
  std::vector<int> training;
};

// A config.json's model_type and the architectures[0] that goes with it, and the one of the same
// model with a score head (ModelConfig::score_head).
struct HfArchitecture {
  std::string_view model_type;    // "qwen3"
  std::string_view architecture;  // "Qwen3ForCausalLM"
  std::string_view classifier;    // "Qwen3ForSequenceClassification"
};

class ModelFamily {
 public:
  virtual ~ModelFamily() = default;
  // The model code that runs the family (model/causal_lm.hpp, model/gpu/causal_lm.hpp): GPT-2's,
  // or the Llama-style decoder, which the Llama family and Phi-3 share.
  virtual Family family() const = 0;
  // The model_types it reads (the registry, src/model/registry.cpp, finds a family by them).
  virtual std::vector<HfArchitecture> architectures() const = 0;
  // For logs and the dry run: "GPT-2", "Llama (Qwen3ForCausalLM)".
  virtual std::string describe(const ModelConfig& config) const = 0;

  // The tensors, unit by unit, in the order they sit in the flat buffer.
  virtual std::vector<UnitSpec> units(const ModelConfig& config) const = 0;
  virtual HookOrder hook_order(const ModelConfig& config) const = 0;
  // The shape for summary(): "hidden 1024, 16 heads of 128, ..." (the Llama-style decoder's
  // fields by default).
  virtual std::string shape_summary(const ModelConfig& config) const;

  // Training FLOPs per token at sequence length T, N = the logical parameter count.
  virtual double flops_per_token(const ModelConfig& config, std::size_t parameters,
                                 int T) const = 0;

  // config.json: the model it describes (errors name `file` and the key), and the one export
  // writes for a model (the fields a base model's config.json has beyond them are kept).
  virtual ModelConfig from_hf_config(const nlohmann::json& json, const std::string& file) const = 0;
  virtual nlohmann::ordered_json hf_config(const ModelConfig& config) const = 0;

  // Weight files: a tensor a file may hold that the model does not train (GPT-2's attention mask
  // buffers), and the prefix a file may put before, or leave out of, the names.
  virtual bool ignored_file_tensor(const ModelConfig& config, std::string_view name) const = 0;
  virtual std::string_view optional_name_prefix() const { return {}; }
  // How the 2-D weights of its blocks (the linears LoRA adapts) are stored: [out, in] as
  // torch.nn.Linear, or [in, out] as GPT-2's Conv1D.
  virtual bool conv1d_weights() const { return false; }
};

// score.weight [1, C] of ModelConfig::score_head: no bias, weight decay, normal(0, 0.02) from
// scratch (a base model's initializer_range: train/pretrained.hpp).
TensorSpec score_tensor(const ModelConfig& config);

// The registered family of config.architecture (src/model/registry.cpp).
const ModelFamily& family_of(const ModelConfig& config);

// One line for the dry run and `env`: the family and the shape, e.g. "Llama family
// (Qwen3ForCausalLM): 28 layers, hidden 1024, 16 heads of 128, 8 key/value heads, MLP 3072,
// 40960 positions, vocabulary 151936, tied embeddings, q/k norm".
std::string summary(const ModelConfig& config);

// Training FLOPs per token at sequence length T: the family's count over the logical parameters.
double flops_per_token(const ModelConfig& config, int T);

// The model a Hugging Face config.json describes, by its model_type and the registry (gpt2,
// llama, mistral, qwen2, qwen3, phi3). Another model_type, an `architectures` entry the
// family does not have, or an option it does not support is an Error naming `file`, the key and
// the value.
// A folder whose architectures lists the family's classifier (LlamaForSequenceClassification,
// GPT2ForSequenceClassification, ...) is the model with score_head, and must have one label
// (id2label of one entry, or num_labels 1).
ModelConfig read_hf_config(const nlohmann::json& json, const std::string& file);

// The config.json of a folder of the model: the family's hf_config, and with score_head the
// family's classifier as transformers writes it for one label (architectures, id2label,
// label2id; the caller adds pad_token_id, which transformers needs to find each row's last token).
nlohmann::ordered_json hf_config(const ModelConfig& config);

// "LlamaForSequenceClassification" for a model of LlamaForCausalLM.
std::string_view classifier_architecture(const ModelConfig& config);

}  // namespace autotrain::model
