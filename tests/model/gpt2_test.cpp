// The whole GPT-2 model on a tiny shape: L = 2, NH = 2, C = 16, T = 8, V = 37 (Vp = 128), B = 2.
#include "autotrain/model/gpt2.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "autotrain/core/error.hpp"
#include "autotrain/kernels/threads.hpp"
#include "autotrain/model/init.hpp"
#include "autotrain/model/param_layout.hpp"
#include "model_test_support.hpp"

namespace autotrain::model::gpt2_test {
namespace {

constexpr int B = 2, T = 8;

ModelConfig tiny() {
  return ModelConfig::gpt2(2, 2, 16, T, 37);
}

template <typename F>
std::vector<F> initial_params(const ParamLayout& layout, std::uint64_t seed) {
  std::vector<float> p(layout.padded_size());
  init_params(layout, seed, p);
  return std::vector<F>(p.begin(), p.end());
}

struct Batch {
  std::vector<std::int32_t> inputs = random_tokens(B * T, 37, 11);
  std::vector<std::int32_t> targets = random_tokens(B * T, 37, 12);
};

TEST(Gpt2, GradientsOfEveryTensorMatchFiniteDifferencesInDouble) {
  const ParamLayout layout(tiny(), 2);
  std::vector<double> params = initial_params<double>(layout, 3);
  // Larger weights than GPT-2's 0.02 so every path carries a gradient well above round-off.
  std::mt19937 gen(5);
  std::normal_distribution<double> noise(0.0, 0.3);
  for (const auto& t : layout.tensors()) {
    const std::size_t real = t.name == "transformer.wte.weight" ? 37u * 16u : t.numel;
    for (std::size_t i = 0; i < real; ++i) params[t.offset + i] += noise(gen);
  }
  std::vector<double> grads(layout.padded_size(), 0.0);
  BasicFlatUnitAccess<double> access(layout, params.data(), grads.data());
  BasicGpt2<double> model(layout, B, T);
  const Batch batch;
  model.forward(access, batch.inputs.data(), batch.targets.data());
  model.backward(access, 1.0);

  std::mt19937 pick(9);
  for (const auto& t : layout.tensors()) {
    const std::size_t real = t.name == "transformer.wte.weight" ? 37u * 16u : t.numel;
    std::uniform_int_distribution<std::size_t> index(0, real - 1);
    for (int k = 0; k < 4; ++k) {
      const std::size_t i = t.offset + index(pick);
      const double saved = params[i];
      const double h = 1e-5;
      params[i] = saved + h;
      const double plus = model.forward(access, batch.inputs.data(), batch.targets.data());
      params[i] = saved - h;
      const double minus = model.forward(access, batch.inputs.data(), batch.targets.data());
      params[i] = saved;
      const double numeric = (plus - minus) / (2 * h);
      EXPECT_NEAR(grads[i], numeric, 1e-8 + 1e-6 * std::abs(numeric))
          << t.name << "[" << i - t.offset << "]";
    }
  }
}

TEST(Gpt2, InitialLossIsCloseToLogVocabulary) {
  const ModelConfig config = ModelConfig::gpt2(2, 2, 32, 16, 500);
  const ParamLayout layout(config);
  auto params = initial_params<float>(layout, 1);
  FlatUnitAccess access(layout, params.data(), nullptr);
  Gpt2Model model(layout, 4, 16);
  const auto inputs = random_tokens(64, 500, 1), targets = random_tokens(64, 500, 2);
  const float loss = model.forward(access, inputs.data(), targets.data());
  EXPECT_NEAR(loss, std::log(500.0), 0.03 * std::log(500.0));
}

// Plain Adam, written here because the optim layer is not this test's subject.
void adam_step(std::vector<float>& p, const std::vector<float>& g, std::vector<float>& m,
               std::vector<float>& v, int step, float lr) {
  const float b1 = 0.9f, b2 = 0.999f;
  for (std::size_t i = 0; i < p.size(); ++i) {
    m[i] = b1 * m[i] + (1 - b1) * g[i];
    v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
    const float mh = m[i] / (1 - std::pow(b1, static_cast<float>(step)));
    const float vh = v[i] / (1 - std::pow(b2, static_cast<float>(step)));
    p[i] -= lr * mh / (std::sqrt(vh) + 1e-8f);
  }
}

TEST(Gpt2, OverfitsOneBatchToNearZeroLoss) {
  const ParamLayout layout(tiny());
  auto params = initial_params<float>(layout, 2);
  std::vector<float> grads(params.size()), m(params.size()), v(params.size());
  FlatUnitAccess access(layout, params.data(), grads.data());
  Gpt2Model model(layout, B, T);
  const Batch batch;
  float first = 0, loss = 0;
  for (int step = 1; step <= 300; ++step) {
    std::fill(grads.begin(), grads.end(), 0.0f);
    loss = model.forward(access, batch.inputs.data(), batch.targets.data());
    if (step == 1) first = loss;
    model.backward(access, 1.0f);
    adam_step(params, grads, m, v, step, 1e-2f);
  }
  EXPECT_GT(first, 3.0f);
  EXPECT_LT(loss, 0.05f);
}

std::vector<float> sgd_losses(int steps) {
  const ParamLayout layout(tiny());
  auto params = initial_params<float>(layout, 4);
  std::vector<float> grads(params.size());
  FlatUnitAccess access(layout, params.data(), grads.data());
  Gpt2Model model(layout, B, T);
  const Batch batch;
  std::vector<float> losses;
  for (int step = 0; step < steps; ++step) {
    std::fill(grads.begin(), grads.end(), 0.0f);
    losses.push_back(model.forward(access, batch.inputs.data(), batch.targets.data()));
    model.backward(access, 1.0f);
    for (std::size_t i = 0; i < params.size(); ++i) params[i] -= 0.5f * grads[i];
  }
  return losses;
}

TEST(Gpt2, SameSeedAndThreadCountGiveBitIdenticalLosses) {
  kernels::set_num_threads(2);
  const auto a = sgd_losses(5);
  const auto b = sgd_losses(5);
  EXPECT_EQ(a, b);  // exact float equality, not near
  EXPECT_LT(a.back(), a.front());
}

TEST(Gpt2, PaddedVocabularyRowsNeverAffectLossAndGetZeroGradient) {
  const ParamLayout layout(tiny());
  auto params = initial_params<float>(layout, 5);
  std::vector<float> grads(params.size(), 0.0f);
  FlatUnitAccess access(layout, params.data(), grads.data());
  Gpt2Model model(layout, B, T);
  const Batch batch;
  const float loss = model.forward(access, batch.inputs.data(), batch.targets.data());
  model.backward(access, 1.0f);
  const auto& wte = layout.tensor("transformer.wte.weight");
  for (std::size_t i = 37 * 16; i < wte.numel; ++i) ASSERT_EQ(grads[wte.offset + i], 0.0f);

  std::vector<float> grads2(params.size(), 0.0f);
  FlatUnitAccess access2(layout, params.data(), grads2.data());
  for (std::size_t i = 37 * 16; i < wte.numel; ++i) params[wte.offset + i] = 100.0f;
  EXPECT_EQ(model.forward(access2, batch.inputs.data(), batch.targets.data()), loss);
  model.backward(access2, 1.0f);
  for (std::size_t i = 0; i < 37 * 16; ++i) {
    ASSERT_EQ(grads2[wte.offset + i], grads[wte.offset + i]);
  }
}

TEST(Gpt2, BackwardAccumulatesSoTwoHalfStepsEqualOneFullStep) {
  const ParamLayout layout(tiny());
  auto params = initial_params<float>(layout, 6);
  std::vector<float> once(params.size(), 0.0f), twice(params.size(), 0.0f);
  Gpt2Model model(layout, B, T);
  const Batch batch;
  FlatUnitAccess a1(layout, params.data(), once.data());
  model.forward(a1, batch.inputs.data(), batch.targets.data());
  model.backward(a1, 1.0f);
  FlatUnitAccess a2(layout, params.data(), twice.data());
  for (int k = 0; k < 2; ++k) {
    model.forward(a2, batch.inputs.data(), batch.targets.data());
    model.backward(a2, 0.5f);
  }
  for (std::size_t i = 0; i < once.size(); ++i) {
    ASSERT_NEAR(twice[i], once[i], 1e-6f + 1e-5f * std::abs(once[i])) << i;
  }
}

TEST(Gpt2, CallsUnitHooksInTheDocumentedOrderAndNeverUsesReleasedParameters) {
  const ParamLayout layout(tiny(), 2);  // L = 2: units 0 (embeddings), 1, 2 (blocks), 3 (ln_f)
  const auto params = initial_params<float>(layout, 8);
  const Batch batch;
  Gpt2Model model(layout, B, T);

  GatheringAccess gathering(layout, params);
  const float loss = model.forward(gathering, batch.inputs.data(), batch.targets.data());
  const std::vector<std::string> forward_order = {
      "params(0)",  "release(0)", "params(1)",  "release(1)", "params(2)",
      "release(2)", "params(3)",  "release(3)", "params(0)",  "release(0)"};
  EXPECT_EQ(gathering.calls, forward_order);
  gathering.calls.clear();
  model.backward(gathering, 1.0f);
  const std::vector<std::string> backward_order = {
      "params(0)", "grads(0)",      "release(0)",                    // LM head
      "params(3)", "grads(3)",      "release(3)", "grads_ready(3)",  // ln_f
      "params(2)", "grads(2)",      "release(2)", "grads_ready(2)",  // block 1
      "params(1)", "grads(1)",      "release(1)", "grads_ready(1)",  // block 0
      "grads(0)",  "grads_ready(0)"};                                // encoder
  EXPECT_EQ(gathering.calls, backward_order);

  // Same loss and gradients as the whole flat buffers: no hook-free access happened.
  auto flat_params = params;
  std::vector<float> grads(params.size(), 0.0f);
  FlatUnitAccess flat(layout, flat_params.data(), grads.data());
  EXPECT_EQ(model.forward(flat, batch.inputs.data(), batch.targets.data()), loss);
  model.backward(flat, 1.0f);
  for (int u = 0; u < layout.num_units(); ++u) {
    const auto& unit = layout.units()[u];
    for (std::size_t i = 0; i < unit.padded_numel; ++i) {
      ASSERT_EQ(gathering.unit_grads_[u][i], grads[unit.offset + i]) << unit.name << " " << i;
    }
  }
}

TEST(Gpt2, NextTokenLogitsAgreeWithTheTrainingForward) {
  const ParamLayout layout(tiny());
  const auto params = initial_params<float>(layout, 9);
  FlatUnitAccess access(layout, params.data(), nullptr);
  const int n = 5;
  Gpt2Model model(layout, 1, n);
  const auto inputs = random_tokens(n, 37, 13), targets = random_tokens(n, 37, 14);
  model.forward(access, inputs.data(), targets.data());
  const float last_loss = model.losses()[n - 1];
  const auto logits = model.next_token_logits(access, inputs);
  ASSERT_EQ(logits.size(), 37u);
  double sum = 0;
  for (float x : logits) sum += std::exp(static_cast<double>(x));
  EXPECT_NEAR(std::log(sum) - logits[targets[n - 1]], last_loss, 1e-5);
}

TEST(Gpt2, CachedGenerationGivesTheLogitsOfTheFullForwardAtEveryPosition) {
  const ParamLayout layout(tiny());
  const auto params = initial_params<float>(layout, 9);
  FlatUnitAccess access(layout, params.data(), nullptr);
  Gpt2Model model(layout, 1, 1);
  const int n = layout.config().block_size;
  const auto tokens = random_tokens(n, 37, 21);
  for (int pass = 0; pass < 2; ++pass) {  // the second pass proves reset_cache() forgets
    model.reset_cache();
    for (int t = 0; t < n; ++t) {
      const auto cached = model.feed_token(access, tokens[static_cast<std::size_t>(t)]);
      const std::vector<float> got(cached.begin(), cached.end());
      ASSERT_EQ(model.cached_tokens(), t + 1);
      const auto full = model.next_token_logits(
          access, std::span<const std::int32_t>(tokens.data(), static_cast<std::size_t>(t + 1)));
      ASSERT_EQ(got.size(), full.size());
      for (std::size_t v = 0; v < got.size(); ++v)
        ASSERT_NEAR(got[v], full[v], 1e-4) << "position " << t << ", logit " << v;
    }
  }
  EXPECT_THROW(model.feed_token(access, 0), Error);  // the cache is full
  model.reset_cache();
  EXPECT_THROW(model.feed_token(access, 37), Error);  // not a token id
  Gpt2Model fresh(layout, 1, 1);
  EXPECT_THROW(fresh.feed_token(access, 0), Error);  // no reset_cache() yet
}

// A prefilled cache (the prompt as one context) gives the logits of feeding it token by token,
// and the tokens fed after it continue as they would: at every split of the sequence.
TEST(Gpt2, PrefillLeavesTheCacheOfFeedingTheTokensOneByOne) {
  const ParamLayout layout(tiny());
  const auto params = initial_params<float>(layout, 9);
  FlatUnitAccess access(layout, params.data(), nullptr);
  Gpt2Model fed(layout, 1, 1);
  const int n = layout.config().block_size;
  const auto tokens = random_tokens(n, 37, 23);
  fed.reset_cache();
  std::vector<std::vector<float>> expected;
  for (const std::int32_t token : tokens) {
    const auto logits = fed.feed_token(access, token);
    expected.emplace_back(logits.begin(), logits.end());
  }
  for (const int split : {1, 2, n / 2, n - 1, n}) {
    Gpt2Model prefilled(layout, 1, 1);  // a fresh cache: no rows left from another split
    prefilled.reset_cache();
    const auto first = std::span<const std::int32_t>(tokens.data(), std::size_t(split));
    const auto prefill_logits = prefilled.prefill(access, first);
    std::vector<float> got(prefill_logits.begin(), prefill_logits.end());
    ASSERT_EQ(prefilled.cached_tokens(), split);
    for (int t = split - 1; t < n; ++t) {
      if (t >= split) {
        const auto logits = prefilled.feed_token(access, tokens[std::size_t(t)]);
        got.assign(logits.begin(), logits.end());
      }
      ASSERT_EQ(got.size(), expected[std::size_t(t)].size());
      for (std::size_t v = 0; v < got.size(); ++v)
        ASSERT_NEAR(got[v], expected[std::size_t(t)][v], 1e-4)
            << "prefill of " << split << ", position " << t << ", logit " << v;
    }
  }
  Gpt2Model prefilled(layout, 1, 1);
  prefilled.reset_cache();
  const std::vector<std::int32_t> too_many(std::size_t(n) + 1, 0), bad = {1, 37};
  EXPECT_THROW(prefilled.prefill(access, too_many), Error);  // more than the cache holds
  EXPECT_THROW(prefilled.prefill(access, bad), Error);       // not a token id
  prefilled.feed_token(access, 1);
  EXPECT_THROW(prefilled.prefill(access, std::span(bad.data(), 1)), Error);  // not empty
  Gpt2Model fresh(layout, 1, 1);
  EXPECT_THROW(fresh.prefill(access, std::span(bad.data(), 1)), Error);  // no reset_cache() yet
}

TEST(Gpt2, RejectsOutOfRangeTokensNamingThePosition) {
  const ParamLayout layout(tiny());
  const auto params = initial_params<float>(layout, 1);
  FlatUnitAccess access(layout, params.data(), nullptr);
  Gpt2Model model(layout, B, T);
  Batch batch;
  batch.targets[5] = 37;
  try {
    model.forward(access, batch.inputs.data(), batch.targets.data());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("targets[5] = 37"), std::string::npos) << e.what();
  }
}

TEST(Gpt2, RejectsBackwardWithoutForwardAndContextLongerThanBlockSize) {
  const ParamLayout layout(tiny());
  auto params = initial_params<float>(layout, 1);
  std::vector<float> grads(params.size());
  FlatUnitAccess access(layout, params.data(), grads.data());
  Gpt2Model model(layout, B, T);
  EXPECT_THROW(model.backward(access, 1.0f), Error);
  EXPECT_THROW(Gpt2Model(layout, 1, T + 1), Error);
  const std::vector<std::int32_t> too_long(T + 1, 0);
  EXPECT_THROW(model.next_token_logits(access, too_long), Error);
}

}  // namespace
}  // namespace autotrain::model::gpt2_test
