// Activation checkpointing (make_causal_lm's `recompute`, model/recompute.hpp) in both families'
// CPU models: selective and full give the same losses and gradients to the bit as keeping every
// activation (none), in the same unit hook order, in less activation memory: full the least.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "autotrain/core/error.hpp"
#include "autotrain/model/causal_lm.hpp"
#include "autotrain/model/init.hpp"
#include "autotrain/model/param_layout.hpp"
#include "model_test_support.hpp"

namespace autotrain::model::recompute_test {
namespace {

constexpr int B = 2, T = 8, V = 37;

// Gemma 2's block on the Qwen3-like shape: sandwich norms, GeGLU, soft caps, a sliding window.
ModelConfig gemma_config() {
  ModelConfig c = tiny_qwen3_config(3, 64, V);
  c.architecture = "Gemma2ForCausalLM";
  c.qk_norm = false;
  c.gate = GateActivation::gelu_tanh;
  c.norm_offset = c.embed_scale = c.sandwich_norms = true;
  c.query_pre_attn_scalar = 9;
  c.attn_softcap = 2;
  c.final_softcap = 3;
  c.sliding_window = 3;
  c.sliding_layers = {true, false, true};
  return c;
}

struct Outcome {
  std::vector<float> losses;
  std::vector<std::vector<float>> grads;  // per unit
  std::vector<std::string> calls;
  std::size_t activation_bytes = 0;
};

// Two steps (so the second forward overwrites what the first recomputation left).
Outcome train(const ParamLayout& layout, Recompute mode) {
  std::vector<float> params(layout.padded_size());
  init_params(layout, 3, params);
  GatheringAccess access(layout, params);
  const auto model = make_causal_lm<float>(layout, B, T, mode);
  Outcome run;
  for (std::uint32_t step = 0; step < 2; ++step) {
    const auto inputs = random_tokens(B * T, V, 11 + step);
    const auto targets = random_tokens(B * T, V, 21 + step);
    run.losses.push_back(model->forward(access, inputs.data(), targets.data()));
    model->backward(access, 1.0f);
  }
  run.grads = access.unit_grads_;
  run.calls = access.calls;
  run.activation_bytes = model->activation_bytes();
  return run;
}

class RecomputeModes : public ::testing::TestWithParam<ModelConfig> {};

TEST_P(RecomputeModes, GiveTheSameBitsInTheSameHookOrderWithLessActivationMemory) {
  const ParamLayout layout(GetParam());
  const Outcome kept = train(layout, Recompute::none);
  std::size_t previous_bytes = kept.activation_bytes;
  for (const Recompute mode : {Recompute::selective, Recompute::full}) {
    SCOPED_TRACE(recompute_name(mode));
    const Outcome recomputed = train(layout, mode);
    EXPECT_EQ(recomputed.losses, kept.losses);
    ASSERT_EQ(recomputed.grads.size(), kept.grads.size());
    for (std::size_t u = 0; u < kept.grads.size(); ++u) {
      ASSERT_EQ(recomputed.grads[u], kept.grads[u]) << "unit " << u;
    }
    EXPECT_EQ(recomputed.calls, kept.calls);
    EXPECT_LT(recomputed.activation_bytes, previous_bytes);  // none > selective > full
    previous_bytes = recomputed.activation_bytes;
  }
}

std::string family_name(const ::testing::TestParamInfo<ModelConfig>& param) {
  if (param.param.family == Family::gpt2) return "gpt2";
  return param.param.sandwich_norms ? "gemma2" : "qwen3";
}

INSTANTIATE_TEST_SUITE_P(Families, RecomputeModes,
                         ::testing::Values(ModelConfig::gpt2(3, 2, 16, T, V),
                                           tiny_qwen3_config(3, 64, V), gemma_config()),
                         family_name);

TEST(RecomputeNames, ParseTheirNamesAndRefuseOthersNamingTheValue) {
  for (const Recompute mode : {Recompute::none, Recompute::selective, Recompute::full}) {
    EXPECT_EQ(parse_recompute(recompute_name(mode)), mode);
  }
  try {
    parse_recompute("partial");
    FAIL() << "partial was accepted";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("partial"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace autotrain::model::recompute_test
