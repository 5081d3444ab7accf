// Activation checkpointing (make_causal_lm's `recompute`) in both families' CPU models: the
// same losses and gradients to the bit, the same unit hook order, less activation memory.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "autotrain/model/causal_lm.hpp"
#include "autotrain/model/init.hpp"
#include "autotrain/model/param_layout.hpp"
#include "model_test_support.hpp"

namespace autotrain::model {
namespace {

constexpr int B = 2, T = 8, V = 37;

ModelConfig llama_config() {
  return tiny_qwen3_config(3, 64, V);
}

class Recompute : public ::testing::TestWithParam<ModelConfig> {};

struct Outcome {
  std::vector<float> losses;
  std::vector<std::vector<float>> grads;  // per unit
  std::vector<std::string> calls;
  std::size_t activation_bytes = 0;
};

// Two steps (so the second forward overwrites what the first recomputation left).
Outcome train(const ParamLayout& layout, bool recompute) {
  std::vector<float> params(layout.padded_size());
  init_params(layout, 3, params);
  GatheringAccess access(layout, params);
  const auto model = make_causal_lm<float>(layout, B, T, recompute);
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

TEST_P(Recompute, GivesTheSameBitsInTheSameHookOrderWithLessActivationMemory) {
  const ParamLayout layout(GetParam());
  const Outcome kept = train(layout, false);
  const Outcome recomputed = train(layout, true);
  EXPECT_EQ(recomputed.losses, kept.losses);
  ASSERT_EQ(recomputed.grads.size(), kept.grads.size());
  for (std::size_t u = 0; u < kept.grads.size(); ++u) {
    ASSERT_EQ(recomputed.grads[u], kept.grads[u]) << "unit " << u;
  }
  EXPECT_EQ(recomputed.calls, kept.calls);
  EXPECT_LT(recomputed.activation_bytes, kept.activation_bytes);
}

std::string family_name(const ::testing::TestParamInfo<ModelConfig>& param) {
  return param.param.family == Family::gpt2 ? "gpt2" : "llama";
}

INSTANTIATE_TEST_SUITE_P(Families, Recompute,
                         ::testing::Values(ModelConfig::gpt2(3, 2, 16, T, V), llama_config()),
                         family_name);

}  // namespace
}  // namespace autotrain::model
