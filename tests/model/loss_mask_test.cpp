// Targets that carry no loss (kIgnoreTarget, completion-only loss) in both families' CPU models:
// the loss is the mean over the other positions, and the gradients are that mean's.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "autotrain/core/error.hpp"
#include "autotrain/core/ignore_target.hpp"
#include "autotrain/model/causal_lm.hpp"
#include "autotrain/model/init.hpp"
#include "autotrain/model/param_layout.hpp"
#include "model_test_support.hpp"

namespace autotrain::model::loss_mask_test {
namespace {

constexpr int B = 2, T = 8, V = 37;

ModelConfig llama_config() {
  ModelConfig c = ModelConfig::gpt2(2, 4, 16, 64, V);
  c.family = Family::llama;
  c.architecture = "LlamaForCausalLM";
  c.n_kv_head = 2;
  c.intermediate_size = 24;
  return c;
}

class LossMask : public ::testing::TestWithParam<ModelConfig> {};

// Random parameters larger than the init's, so every path carries a gradient well above round-off.
std::vector<double> noisy_params(const ParamLayout& layout) {
  std::vector<float> initial(layout.padded_size());
  init_params(layout, 3, initial);
  std::vector<double> params(initial.begin(), initial.end());
  std::mt19937 gen(5);
  std::normal_distribution<double> noise(0.0, 0.3);
  for (auto& p : params) p += noise(gen);
  return params;
}

TEST_P(LossMask, IgnoredTargetsLeaveTheMeanOverTheOthersAndItsGradient) {
  const ParamLayout layout(GetParam(), 2);
  std::vector<double> params = noisy_params(layout);
  std::vector<double> grads(layout.padded_size(), 0.0);
  BasicFlatUnitAccess<double> access(layout, params.data(), grads.data());
  const auto model = make_causal_lm<double>(layout, B, T);
  const auto inputs = random_tokens(B * T, V, 11);
  auto targets = random_tokens(B * T, V, 12);

  model->forward(access, inputs.data(), targets.data());
  const std::vector<double> full(model->losses().begin(), model->losses().end());
  double kept_sum = 0;
  int kept = 0;
  for (int i = 0; i < B * T; ++i) {
    if (i % 3 == 1) {
      targets[i] = kIgnoreTarget;
    } else {
      kept_sum += full[i];
      ++kept;
    }
  }
  const double loss = model->forward(access, inputs.data(), targets.data());
  EXPECT_NEAR(loss, kept_sum / kept, 1e-12);
  for (int i = 1; i < B * T; i += 3) EXPECT_EQ(model->losses()[i], 0.0);
  model->backward(access, 1.0);

  std::mt19937 pick(9);
  std::uniform_int_distribution<std::size_t> index(0, layout.padded_size() - 1);
  int checked = 0;
  while (checked < 24) {
    const std::size_t i = index(pick);
    if (grads[i] == 0.0) continue;  // padding, or an embedding row no input uses
    const double saved = params[i];
    const double h = 1e-5;
    params[i] = saved + h;
    const double plus = model->forward(access, inputs.data(), targets.data());
    params[i] = saved - h;
    const double minus = model->forward(access, inputs.data(), targets.data());
    params[i] = saved;
    const double numeric = (plus - minus) / (2 * h);
    EXPECT_NEAR(grads[i], numeric, 1e-8 + 1e-6 * std::abs(numeric)) << i;
    ++checked;
  }
}

TEST_P(LossMask, ABatchWithoutLossHasLossZeroAndNoGradient) {
  const ParamLayout layout(GetParam(), 2);
  std::vector<double> params = noisy_params(layout);
  std::vector<double> grads(layout.padded_size(), 0.0);
  BasicFlatUnitAccess<double> access(layout, params.data(), grads.data());
  const auto model = make_causal_lm<double>(layout, B, T);
  const auto inputs = random_tokens(B * T, V, 11);
  const std::vector<std::int32_t> targets(B * T, kIgnoreTarget);
  EXPECT_EQ(model->forward(access, inputs.data(), targets.data()), 0.0);
  model->backward(access, 1.0);
  for (const double g : grads) ASSERT_EQ(g, 0.0);
}

// backward_weighted: the gradient of Σ w · loss over the positions (the preference losses' form),
// against central differences of that sum; ignored targets stay without gradient.
TEST_P(LossMask, WeightedBackwardIsTheGradientOfTheWeightedSum) {
  const ParamLayout layout(GetParam(), 2);
  std::vector<double> params = noisy_params(layout);
  std::vector<double> grads(layout.padded_size(), 0.0);
  BasicFlatUnitAccess<double> access(layout, params.data(), grads.data());
  const auto model = make_causal_lm<double>(layout, B, T);
  const auto inputs = random_tokens(B * T, V, 11);
  auto targets = random_tokens(B * T, V, 12);
  std::vector<double> weights(B * T);
  std::mt19937 draw(4);
  std::normal_distribution<double> weight(0.0, 1.0);
  for (int i = 0; i < B * T; ++i) {
    weights[i] = weight(draw);  // of both signs, as a rejected completion's
    if (i % 4 == 3) targets[i] = kIgnoreTarget;
  }
  auto objective = [&] {
    model->forward(access, inputs.data(), targets.data());
    double sum = 0;
    for (int i = 0; i < B * T; ++i) sum += weights[i] * model->losses()[i];
    return sum;
  };
  objective();
  model->backward_weighted(access, 0.5, weights);
  std::mt19937 pick(9);
  std::uniform_int_distribution<std::size_t> index(0, layout.padded_size() - 1);
  int checked = 0;
  while (checked < 24) {
    const std::size_t i = index(pick);
    if (grads[i] == 0.0) continue;
    const double saved = params[i];
    const double h = 1e-5;
    params[i] = saved + h;
    const double plus = objective();
    params[i] = saved - h;
    const double minus = objective();
    params[i] = saved;
    const double numeric = 0.5 * (plus - minus) / (2 * h);
    EXPECT_NEAR(grads[i], numeric, 1e-8 + 1e-6 * std::abs(numeric)) << i;
    ++checked;
  }
  EXPECT_THROW(model->backward_weighted(access, 1.0, std::span<const double>(weights).first(3)),
               Error);
}

std::string family_name(const ::testing::TestParamInfo<ModelConfig>& param) {
  return param.param.family == Family::gpt2 ? "gpt2" : "llama";
}

INSTANTIATE_TEST_SUITE_P(Families, LossMask,
                         ::testing::Values(ModelConfig::gpt2(2, 2, 16, T, V), llama_config()),
                         family_name);

}  // namespace
}  // namespace autotrain::model::loss_mask_test
