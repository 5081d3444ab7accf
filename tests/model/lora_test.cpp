// LoRA (model/lora.hpp, model/lora_access.hpp): the adapters' layout as PEFT names it, the
// merged weights against a naive sum, and the adapters' gradients through both families' CPU
// models against central differences in double.
#include "autotrain/model/lora.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "autotrain/core/error.hpp"
#include "autotrain/model/causal_lm.hpp"
#include "autotrain/model/init.hpp"
#include "autotrain/model/lora_access.hpp"
#include "model_test_support.hpp"

namespace autotrain::model::lora_test {
namespace {

constexpr int B = 2, T = 6, V = 29;

ModelConfig llama_config() {
  return tiny_qwen3_config(2, 32, V);
}

LoraOptions options(std::vector<std::string> targets, int r = 3) {
  return {r, 2.0 * r + 1, std::move(targets)};
}

std::vector<std::string> names(const ParamLayout& layout, int unit) {
  std::vector<std::string> out;
  const auto& u = layout.units()[static_cast<std::size_t>(unit)];
  for (int t = u.first_tensor; t < u.first_tensor + u.tensor_count; ++t) {
    out.push_back(layout.tensors()[static_cast<std::size_t>(t)].name);
  }
  return out;
}

TEST(LoraLayout, NamesTheAdaptersAsPeftDoesInTheModelsUnits) {
  const ParamLayout gpt2(ModelConfig::gpt2(2, 2, 8, 16, V));
  const ParamLayout adapters = lora_layout(gpt2, options({"all-linear"}), 3);
  ASSERT_EQ(adapters.num_units(), gpt2.num_units());
  EXPECT_EQ(adapters.units()[0].numel, 0u);
  EXPECT_EQ(adapters.units()[3].numel, 0u);
  const std::string h = "base_model.model.transformer.h.1.";
  EXPECT_EQ(
      names(adapters, 2),
      (std::vector<std::string>{h + "attn.c_attn.lora_A.weight", h + "attn.c_attn.lora_B.weight",
                                h + "attn.c_proj.lora_A.weight", h + "attn.c_proj.lora_B.weight",
                                h + "mlp.c_fc.lora_A.weight", h + "mlp.c_fc.lora_B.weight",
                                h + "mlp.c_proj.lora_A.weight", h + "mlp.c_proj.lora_B.weight"}));
  // Conv1D c_attn [C, 3C]: in C, out 3C.
  EXPECT_EQ(adapters.tensor(h + "attn.c_attn.lora_A.weight").shape,
            (std::vector<std::int64_t>{3, 8}));
  EXPECT_EQ(adapters.tensor(h + "attn.c_attn.lora_B.weight").shape,
            (std::vector<std::int64_t>{24, 3}));
  EXPECT_EQ(adapters.units()[2].padded_numel % 48, 0u);  // padded for 3 ranks

  const ParamLayout llama(llama_config());
  const ParamLayout qv = lora_layout(llama, options({"q_proj", "v_proj"}), 1);
  const std::string l = "base_model.model.model.layers.0.self_attn.";
  EXPECT_EQ(names(qv, 1),
            (std::vector<std::string>{l + "q_proj.lora_A.weight", l + "q_proj.lora_B.weight",
                                      l + "v_proj.lora_A.weight", l + "v_proj.lora_B.weight"}));
  EXPECT_EQ(qv.tensor(l + "v_proj.lora_B.weight").shape, (std::vector<std::int64_t>{12, 3}));
  EXPECT_EQ(lora_targets(llama, options({"all-linear"})).size(), 14u);  // 7 per block
  // GPT-2's c_proj names both projections, as PEFT's suffix match does.
  EXPECT_EQ(lora_targets(gpt2, options({"c_proj"})).size(), 4u);
  EXPECT_EQ(lora_targets(gpt2, options({"mlp.c_proj"})).size(), 2u);
}

TEST(LoraLayout, RefusesNamesThatMatchNothing) {
  const ParamLayout llama(llama_config());
  try {
    lora_layout(llama, options({"q_proj", "c_attn"}), 1);
    FAIL() << "expected an Error";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("'c_attn'"), std::string::npos) << message;
    EXPECT_NE(message.find("gate_proj"), std::string::npos) << message;
  }
  EXPECT_THROW(lora_layout(llama, options({"all-linear", "q_proj"}), 1), Error);
  EXPECT_EQ(parse_target_modules(" q_proj, v_proj ,"),
            (std::vector<std::string>{"q_proj", "v_proj"}));
}

template <typename F>
std::vector<F> random_values(std::size_t n, std::uint32_t seed, double scale) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> dist(0, scale);
  std::vector<F> out(n);
  for (auto& x : out) x = static_cast<F>(dist(gen));
  return out;
}

class LoraModel : public ::testing::TestWithParam<ModelConfig> {};

TEST_P(LoraModel, MergesTheProductOfTheAdaptersIntoEachWeight) {
  const ParamLayout base(GetParam());
  const ParamLayout adapters = lora_layout(base, options({"all-linear"}), 1);
  const LoraAdapters lora(base, adapters, options({"all-linear"}));
  const auto a = random_values<double>(adapters.padded_size(), 5, 0.3);
  std::vector<double> merged(base.padded_size(), 0.0);
  for (int u = 0; u < base.num_units(); ++u) {
    if (!lora.adapts(u)) continue;
    lora.merge(u, a.data() + adapters.units()[u].offset, merged.data() + base.units()[u].offset);
  }
  const double s = lora.options().scale();
  const bool conv1d = base.family().conv1d_weights();
  for (const LoraTarget& target : lora.targets()) {
    const auto& w = base.tensors()[static_cast<std::size_t>(target.weight)];
    const auto& A = adapters.tensor("base_model.model." + target.module + ".lora_A.weight");
    const auto& Bt = adapters.tensor("base_model.model." + target.module + ".lora_B.weight");
    for (std::int64_t o = 0; o < target.out; o += 5) {
      for (std::int64_t i = 0; i < target.in; i += 3) {
        double sum = 0;
        for (int k = 0; k < 3; ++k)
          sum += a[Bt.offset + o * 3 + k] * a[A.offset + k * target.in + i];
        const std::size_t at = w.offset + (conv1d ? i * target.out + o : o * target.in + i);
        ASSERT_NEAR(merged[at], s * sum, 1e-12) << target.module << " [" << o << ", " << i << "]";
      }
    }
  }
}

// Loss of the model over base + adapters (double), and the adapters' gradients.
struct LoraRun {
  double loss = 0;
  std::vector<double> grads;
};

LoraRun run_lora(const ParamLayout& base, const std::vector<double>& base_values,
                 const ParamLayout& adapters, const LoraAdapters& lora,
                 const std::vector<double>& adapter_values, bool backward) {
  const auto inputs = random_tokens(B * T, V, 7);
  const auto targets = random_tokens(B * T, V, 8);
  LoraRun run;
  run.grads.assign(adapters.padded_size(), 0.0);
  BasicFlatUnitAccess<double> inner(adapters, adapter_values.data(), run.grads.data());
  BasicFlatUnitAccess<double> frozen(base, base_values.data(), nullptr);
  BasicLoraAccess<double> access(base, frozen, lora, adapters, inner);
  const auto model = make_causal_lm<double>(base, B, T, Recompute::full);
  run.loss = model->forward(access, inputs.data(), targets.data());
  if (backward) model->backward(access, 1.0);
  return run;
}

TEST_P(LoraModel, GivesTheAdaptersTheGradientsOfCentralDifferences) {
  const ParamLayout base(GetParam());
  const LoraOptions lora_options = options({"all-linear"});
  const ParamLayout adapters = lora_layout(base, lora_options, 2);
  const LoraAdapters lora(base, adapters, lora_options);
  std::vector<float> initial(base.padded_size());
  init_params(base, 3, initial);
  const std::vector<double> base_values(initial.begin(), initial.end());
  std::vector<double> values = random_values<double>(adapters.padded_size(), 9, 0.2);
  const LoraRun run = run_lora(base, base_values, adapters, lora, values, true);

  // The loss is the plain model's over the merged weights.
  std::vector<double> merged = base_values;
  for (int u = 0; u < base.num_units(); ++u) {
    if (lora.adapts(u))
      lora.merge(u, values.data() + adapters.units()[u].offset,
                 merged.data() + base.units()[u].offset);
  }
  BasicFlatUnitAccess<double> plain(base, merged.data(), nullptr);
  const auto inputs = random_tokens(B * T, V, 7);
  const auto targets = random_tokens(B * T, V, 8);
  EXPECT_NEAR(make_causal_lm<double>(base, B, T)->forward(plain, inputs.data(), targets.data()),
              run.loss, 1e-12);

  std::mt19937 gen(13);
  int checked = 0;
  for (const ParamTensor& tensor : adapters.tensors()) {
    for (int probe = 0; probe < 2; ++probe, ++checked) {
      const std::size_t at = tensor.offset + gen() % tensor.numel;
      const double h = 1e-5, kept = values[at];
      values[at] = kept + h;
      const double up = run_lora(base, base_values, adapters, lora, values, false).loss;
      values[at] = kept - h;
      const double down = run_lora(base, base_values, adapters, lora, values, false).loss;
      values[at] = kept;
      const double numeric = (up - down) / (2 * h);
      ASSERT_NEAR(run.grads[at], numeric, 1e-7 + 1e-5 * std::fabs(numeric))
          << tensor.name << " element " << at - tensor.offset;
    }
  }
  EXPECT_GT(checked, 8);
}

TEST_P(LoraModel, WorksThroughStage3LikeAccessesThatPoisonReleasedUnits) {
  const ParamLayout base(GetParam());
  const LoraOptions lora_options = options({"all-linear"});
  const ParamLayout adapters = lora_layout(base, lora_options, 1);
  const LoraAdapters lora(base, adapters, lora_options);
  std::vector<float> base_values(base.padded_size());
  init_params(base, 3, base_values);
  const std::vector<double> base_double(base_values.begin(), base_values.end());
  const auto values = random_values<double>(adapters.padded_size(), 9, 0.2);
  const LoraRun reference = run_lora(base, base_double, adapters, lora, values, true);

  const std::vector<float> values_float(values.begin(), values.end());
  GatheringAccess inner(adapters, values_float);
  GatheringAccess frozen(base, base_values);  // the frozen weights gathered like ZeRO-3's
  LoraAccess access(base, frozen, lora, adapters, inner);
  const auto model = make_causal_lm<float>(base, B, T);
  const auto inputs = random_tokens(B * T, V, 7);
  const auto targets = random_tokens(B * T, V, 8);
  EXPECT_NEAR(model->forward(access, inputs.data(), targets.data()), reference.loss, 1e-5);
  model->backward(access, 1.0f);
  for (int u = 0; u < adapters.num_units(); ++u) {
    const auto& unit = adapters.units()[u];
    for (std::size_t i = 0; i < unit.numel; ++i) {
      ASSERT_NEAR(inner.unit_grads_[u][i], reference.grads[unit.offset + i], 2e-5)
          << "unit " << u << " element " << i;
    }
  }
  EXPECT_GT(access.scratch_bytes(), 0u);
  // Every gathered base unit is released (a merged one at once), as ZeRO-3's slots require.
  const auto count = [&](const std::string& call) {
    return std::count(frozen.calls.begin(), frozen.calls.end(), call);
  };
  for (int u = 0; u < base.num_units(); ++u) {
    const std::string unit = "(" + std::to_string(u) + ")";
    EXPECT_GT(count("params" + unit), 0) << "unit " << u;
    EXPECT_EQ(count("params" + unit), count("release" + unit)) << "unit " << u;
  }
}

// Flat buffers whose first and last units are frozen, as LoRA's are; records grads() calls.
class FreezingAccess final : public UnitAccess {
 public:
  FreezingAccess(const ParamLayout& layout, const float* params, float* grads, bool freeze)
      : flat_(layout, params, grads), last_(layout.final_norm_unit()), freeze_(freeze) {}
  const float* params(int unit) override { return flat_.params(unit); }
  float* grads(int unit) override {
    asked.push_back(unit);
    return flat_.grads(unit);
  }
  bool frozen(int unit) const override { return freeze_ && (unit == 0 || unit == last_); }
  std::vector<int> asked;

 private:
  FlatUnitAccess flat_;
  int last_;
  bool freeze_;
};

TEST_P(LoraModel, ModelsSkipTheGradientsOfFrozenUnitsAndGiveTheBlocksTheSameBits) {
  const ParamLayout layout(GetParam());
  std::vector<float> params(layout.padded_size());
  init_params(layout, 3, params);
  const auto inputs = random_tokens(B * T, V, 7);
  const auto targets = random_tokens(B * T, V, 8);
  std::vector<std::vector<float>> grads;
  std::vector<std::vector<int>> asked;
  for (const bool freeze : {false, true}) {
    grads.emplace_back(layout.padded_size(), 0.0f);
    FreezingAccess access(layout, params.data(), grads.back().data(), freeze);
    const auto model = make_causal_lm<float>(layout, B, T, Recompute::selective);
    model->forward(access, inputs.data(), targets.data());
    model->backward(access, 1.0f);
    asked.push_back(access.asked);
  }
  const int last = layout.final_norm_unit();
  EXPECT_NE(std::count(asked[0].begin(), asked[0].end(), 0), 0);
  EXPECT_EQ(std::count(asked[1].begin(), asked[1].end(), 0), 0);
  if (GetParam().family == Family::llama) {
    EXPECT_EQ(std::count(asked[1].begin(), asked[1].end(), last), 0);
  }
  for (int u = 1; u < last; ++u) {
    const auto& unit = layout.units()[u];
    const auto begin = static_cast<std::ptrdiff_t>(unit.offset);
    const auto end = static_cast<std::ptrdiff_t>(unit.offset + unit.numel);
    ASSERT_TRUE(
        std::equal(grads[0].begin() + begin, grads[0].begin() + end, grads[1].begin() + begin))
        << "unit " << u;
  }
  const auto& embeddings = layout.units()[0];
  EXPECT_TRUE(std::all_of(grads[1].begin(), grads[1].begin() + std::ptrdiff_t(embeddings.numel),
                          [](float g) { return g == 0.0f; }));
}

std::string family_name(const ::testing::TestParamInfo<ModelConfig>& param) {
  return param.param.family == Family::gpt2 ? "gpt2" : "llama";
}

INSTANTIATE_TEST_SUITE_P(Families, LoraModel,
                         ::testing::Values(ModelConfig::gpt2(2, 2, 8, 16, V), llama_config()),
                         family_name);

}  // namespace
}  // namespace autotrain::model::lora_test
