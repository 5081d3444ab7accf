// GPT-2 (GPT2LMHeadModel): learned positions, pre-LayerNorm blocks with biases, causal
// multi-head attention, a tanh-GELU MLP of 4C, the LM head tied to the token embeddings.
//
// Tensors (Hugging Face names; Conv1D weights are [in, out]):
//   unit 0        transformer.wte.weight [Vp, C] (rows >= V are zero and stay zero),
//                 transformer.wpe.weight [T, C]
//   unit 1 + l    transformer.h.{l}.ln_1.weight/bias [C], .attn.c_attn.weight [C, 3C],
//                 .attn.c_attn.bias [3C], .attn.c_proj.weight [C, C], .attn.c_proj.bias [C],
//                 .ln_2.weight/bias [C], .mlp.c_fc.weight [C, 4C], .mlp.c_fc.bias [4C],
//                 .mlp.c_proj.weight [4C, C], .mlp.c_proj.bias [C]
//   unit L + 1    transformer.ln_f.weight/bias [C]; with score_head score.weight [1, C]
//                 (GPT2ForSequenceClassification's, no "transformer." prefix)
// From scratch: weights normal(0, 0.02), the residual projections (c_proj) normal(0, 0.02 /
// sqrt(2L)), biases 0, LayerNorm weights 1.
// Hook order: forward 0, 1..L, L+1, then 0 again for the tied LM head; backward 0 (LM head),
// L+1, L..1 (unit 0's encoder gradient needs no parameters); with the score head, in unit L+1,
// unit 0 is not asked for again. The model: gpt2.cpp.
// Weight files may name the tensors without "transformer."; they may hold the attention mask
// buffers of old checkpoints and an lm_head.weight (the tied wte), which are not trained.
#include <cmath>

#include "autotrain/core/error.hpp"
#include "autotrain/core/json_integer.hpp"
#include "autotrain/core/strings.hpp"
#include "autotrain/model/family.hpp"
#include "family_json.hpp"

namespace autotrain::model {
namespace {

class Gpt2Family final : public ModelFamily {
 public:
  Family family() const override { return Family::gpt2; }
  std::vector<HfArchitecture> architectures() const override {
    return {{"gpt2", "GPT2LMHeadModel", "GPT2ForSequenceClassification"}};
  }
  std::string shape_summary(const ModelConfig& c) const override {
    return cat("n_embd ", c.n_embd, ", ", c.n_head, " heads, ", c.block_size,
               " positions, vocabulary ", c.vocab_size);
  }
  std::string describe(const ModelConfig&) const override { return "GPT-2"; }

  std::vector<UnitSpec> units(const ModelConfig& c) const override {
    const std::int64_t C = c.n_embd;
    const InitRule normal{InitRule::normal, 0.02};
    const InitRule residual{InitRule::normal, 0.02 / std::sqrt(2.0 * c.n_layer)};
    const InitRule zero{InitRule::zero}, one{InitRule::one};
    std::vector<UnitSpec> units;
    units.push_back(
        {"embeddings",
         {{"transformer.wte.weight", {c.padded_vocab_size, C}, normal, true, c.vocab_size},
          {"transformer.wpe.weight", {c.block_size, C}, normal, true}}});
    for (int l = 0; l < c.n_layer; ++l) {
      const std::string h = cat("transformer.h.", l, ".");
      units.push_back({cat("h.", l),
                       {{h + "ln_1.weight", {C}, one},
                        {h + "ln_1.bias", {C}, zero},
                        {h + "attn.c_attn.weight", {C, 3 * C}, normal, true},
                        {h + "attn.c_attn.bias", {3 * C}, zero},
                        {h + "attn.c_proj.weight", {C, C}, residual, true},
                        {h + "attn.c_proj.bias", {C}, zero},
                        {h + "ln_2.weight", {C}, one},
                        {h + "ln_2.bias", {C}, zero},
                        {h + "mlp.c_fc.weight", {C, 4 * C}, normal, true},
                        {h + "mlp.c_fc.bias", {4 * C}, zero},
                        {h + "mlp.c_proj.weight", {4 * C, C}, residual, true},
                        {h + "mlp.c_proj.bias", {C}, zero}}});
    }
    units.push_back(
        {"ln_f", {{"transformer.ln_f.weight", {C}, one}, {"transformer.ln_f.bias", {C}, zero}}});
    if (c.score_head) units.back().tensors.push_back(score_tensor(c));
    return units;
  }

  HookOrder hook_order(const ModelConfig& c) const override {
    HookOrder order;
    const int last = c.n_layer + 1;
    for (int u = 0; u <= last; ++u) order.inference.push_back(u);
    if (!c.score_head) order.inference.push_back(0);  // the tied LM head
    order.training = order.inference;
    if (!c.score_head) order.training.push_back(0);  // backward: LM head, then ln_f, the blocks
    for (int u = last; u >= 1; --u) order.training.push_back(u);
    return order;
  }

  // 6N + 6·L·C·T, as llm.c counts MFU (with the score head, wte is a lookup only).
  double flops_per_token(const ModelConfig& c, std::size_t parameters, int T) const override {
    const double lookup = c.score_head ? double(c.vocab_size) * c.n_embd : 0.0;
    return 6.0 * (static_cast<double>(parameters) - lookup) +
           6.0 * c.n_layer * c.n_embd * double(T);
  }

  ModelConfig from_hf_config(const nlohmann::json& json, const std::string& file) const override {
    const HfConfig config(json, file);
    config.expect_architecture("GPT2LMHeadModel");
    const int positions = config.integer(json.contains("n_positions") ? "n_positions" : "n_ctx");
    ModelConfig c =
        ModelConfig::gpt2(config.integer("n_layer"), config.integer("n_head"),
                          config.integer("n_embd"), positions, config.integer("vocab_size"));
    config.expect_one_of("activation_function", {"gelu_new", "gelu_pytorch_tanh"});
    config.expect_number("layer_norm_epsilon", 1e-5);
    if (json.contains("n_inner") && !json["n_inner"].is_null()) {
      AT_CHECK(config.integer("n_inner") == 4 * c.n_embd, file, ": n_inner ", json["n_inner"],
               " is not supported (expected null or 4 · n_embd = ", 4 * c.n_embd, ")");
    }
    config.expect_bool("tie_word_embeddings", true);
    c.validate();
    return c;
  }

  nlohmann::ordered_json hf_config(const ModelConfig& c) const override {
    return {{"architectures", {"GPT2LMHeadModel"}},
            {"model_type", "gpt2"},
            {"vocab_size", c.vocab_size},
            {"n_positions", c.block_size},
            {"n_ctx", c.block_size},
            {"n_embd", c.n_embd},
            {"n_layer", c.n_layer},
            {"n_head", c.n_head},
            {"n_inner", nullptr},
            {"activation_function", "gelu_new"},
            {"layer_norm_epsilon", 1e-5},
            {"initializer_range", 0.02},
            {"resid_pdrop", 0.0},
            {"embd_pdrop", 0.0},
            {"attn_pdrop", 0.0},
            {"scale_attn_weights", true},
            {"tie_word_embeddings", true}};
  }

  bool ignored_file_tensor(const ModelConfig&, std::string_view name) const override {
    return name.ends_with(".attn.bias") || name.ends_with(".attn.masked_bias") ||
           name == "lm_head.weight";
  }
  std::string_view optional_name_prefix() const override { return "transformer."; }
  bool conv1d_weights() const override { return true; }
};

}  // namespace

const ModelFamily& gpt2_family() {
  static const Gpt2Family family;
  return family;
}

}  // namespace autotrain::model
