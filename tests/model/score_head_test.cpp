// The score head (ModelConfig::score_head, a reward model) in both families' CPU models and their
// descriptions: score.weight [1, C] in the last unit instead of an LM head, the per-position
// losses the marked positions' scores, backward_weighted their weighted sum's gradient, and the
// config.json of transformers' *ForSequenceClassification with one label, read and written.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "autotrain/core/error.hpp"
#include "autotrain/core/ignore_target.hpp"
#include "autotrain/model/causal_lm.hpp"
#include "autotrain/model/family.hpp"
#include "autotrain/model/init.hpp"
#include "autotrain/model/param_layout.hpp"
#include "model_test_support.hpp"
#include "test_support.hpp"

namespace autotrain::model::score_head_test {
namespace {

using autotrain::testing::error_of;

constexpr int B = 2, T = 8, V = 37;

ModelConfig llama_config(bool tied) {
  ModelConfig c = ModelConfig::gpt2(2, 4, 16, 64, V);
  c.family = Family::llama;
  c.architecture = "LlamaForCausalLM";
  c.n_kv_head = 2;
  c.intermediate_size = 24;
  c.tie_word_embeddings = tied;
  return c;
}

// Gemma 2's options: a tied head whose logits are soft-capped (the score is not).
ModelConfig gemma_config() {
  ModelConfig c = llama_config(true);
  c.architecture = "Gemma2ForCausalLM";
  c.norm_offset = c.embed_scale = c.sandwich_norms = true;
  c.final_softcap = 2;
  return c;
}

ModelConfig with_score(ModelConfig c) {
  c.score_head = true;
  return c;
}

// Random parameters larger than the init's, so every path carries a gradient well above round-off.
std::vector<double> noisy_params(const ParamLayout& layout) {
  std::vector<float> initial(layout.padded_size());
  init_params(layout, 3, initial);
  std::vector<double> params(initial.begin(), initial.end());
  std::mt19937 gen(5);
  std::normal_distribution<double> noise(0.0, 0.3);
  for (const auto& t : layout.tensors()) {
    for (std::size_t i = 0; i < t.file_numel(); ++i) params[t.offset + i] += noise(gen);
  }
  return params;
}

// Each row's last position marked (as the trainer marks a sequence's last real token), the
// others kIgnoreTarget; the marks' values are not read.
std::vector<std::int32_t> last_of_each_row() {
  std::vector<std::int32_t> targets(B * T, kIgnoreTarget);
  targets[T - 3] = 5;  // row 0 ends early (padding after it)
  targets[2 * T - 1] = 0;
  return targets;
}

class ScoreHead : public ::testing::TestWithParam<ModelConfig> {};

TEST_P(ScoreHead, TakesTheLmHeadsPlaceInTheLastUnit) {
  const ModelConfig lm = GetParam();
  const ParamLayout causal(lm, 2), scored(with_score(lm), 2);
  const int last = scored.final_norm_unit();
  const ParamTensor& score = scored.tensor("score.weight");
  EXPECT_EQ(score.unit, last);
  EXPECT_EQ(score.shape, (std::vector<std::int64_t>{1, lm.n_embd}));
  EXPECT_EQ(score.role, Role::score);
  EXPECT_TRUE(score.weight_decay);
  EXPECT_THROW(scored.tensor("lm_head.weight"), Error);
  const std::size_t lm_head = lm.tie_word_embeddings ? 0 : std::size_t(V) * lm.n_embd;
  EXPECT_EQ(scored.num_parameters(), causal.num_parameters() - lm_head + lm.n_embd);
  EXPECT_EQ(scored.config().head_unit(), last);
  // The embeddings are the input's only: neither pass asks for unit 0 after the final norm.
  std::vector<int> inference, training;
  for (int u = 0; u <= last; ++u) inference.push_back(u);
  training = inference;
  for (int u = last; u >= 1; --u) training.push_back(u);
  EXPECT_EQ(scored.hook_order().inference, inference);
  EXPECT_EQ(scored.hook_order().training, training);
  EXPECT_TRUE(scored.family().ignored_file_tensor(scored.config(), "lm_head.weight"));
}

// Independent of the score path: an LM head whose row k (a token no input uses) is score.weight
// has the score as its logit k (uncapped: the LM model here has no soft cap).
TEST_P(ScoreHead, ScoresAreTheMarkedPositionsLogitOfAnLmHeadRowHoldingTheScoreWeight) {
  const ParamLayout scored(with_score(GetParam()), 1);
  ModelConfig lm_config = GetParam();
  lm_config.final_softcap = 0;
  const ParamLayout causal(lm_config, 1);
  const std::vector<double> params = noisy_params(scored);
  std::vector<double> lm_params(causal.padded_size(), 0.0);
  for (const auto& t : causal.tensors()) {
    if (t.name == "lm_head.weight") continue;
    const ParamTensor& from = scored.tensor(t.name);
    std::copy_n(params.begin() + std::ptrdiff_t(from.offset), t.numel,
                lm_params.begin() + std::ptrdiff_t(t.offset));
  }
  const int k = V - 1, C = lm_config.n_embd;
  const std::string head = !lm_config.tie_word_embeddings     ? "lm_head.weight"
                           : lm_config.family == Family::gpt2 ? "transformer.wte.weight"
                                                              : "model.embed_tokens.weight";
  std::copy_n(params.begin() + std::ptrdiff_t(scored.tensor("score.weight").offset), C,
              lm_params.begin() + std::ptrdiff_t(causal.tensor(head).offset + std::size_t(k) * C));

  auto inputs = random_tokens(B * T, V - 1, 11);  // never token k
  const auto marks = last_of_each_row();
  std::vector<double> grads(scored.padded_size(), 0.0);
  BasicFlatUnitAccess<double> access(scored, const_cast<double*>(params.data()), grads.data());
  const auto model = make_causal_lm<double>(scored, B, T);
  const double mean = model->forward(access, inputs.data(), marks.data());

  std::vector<double> lm_grads(causal.padded_size(), 0.0);
  BasicFlatUnitAccess<double> lm_access(causal, lm_params.data(), lm_grads.data());
  const auto lm = make_causal_lm<double>(causal, 1, T);
  double sum = 0;
  for (int b = 0; b < B; ++b) {
    for (int t = 0; t < T; ++t) {
      const int i = b * T + t;
      if (marks[i] == kIgnoreTarget) {
        EXPECT_EQ(model->losses()[i], 0.0) << i;
        continue;
      }
      const auto logits = lm->next_token_logits(
          lm_access, std::span<const std::int32_t>(inputs.data() + b * T, std::size_t(t) + 1));
      EXPECT_NEAR(model->losses()[i], logits[k], 1e-12) << i;
      sum += logits[k];
    }
  }
  EXPECT_NEAR(mean, sum / 2, 1e-12);
}

// backward_weighted: the gradient of scale · Σ w · score against central differences, the
// weights of both signs as a pair's (+ for the chosen, − for the rejected).
TEST_P(ScoreHead, WeightedBackwardIsTheGradientOfTheWeightedScores) {
  const ParamLayout layout(with_score(GetParam()), 2);
  std::vector<double> params = noisy_params(layout);
  std::vector<double> grads(layout.padded_size(), 0.0);
  BasicFlatUnitAccess<double> access(layout, params.data(), grads.data());
  const auto model = make_causal_lm<double>(layout, B, T);
  const auto inputs = random_tokens(B * T, V, 11);
  auto marks = last_of_each_row();
  marks[3] = 1;                             // a second mark in row 0: every mark is a score
  std::vector<double> weights(B * T, 7.0);  // unmarked positions' weights are never read
  weights[T - 3] = 0.8;
  weights[3] = 0.3;
  weights[2 * T - 1] = -0.6;
  auto objective = [&] {
    model->forward(access, inputs.data(), marks.data());
    double sum = 0;
    for (int i = 0; i < B * T; ++i) sum += weights[i] * model->losses()[i];
    return sum;
  };
  objective();
  model->backward_weighted(access, 0.5, weights);
  std::mt19937 pick(9);
  std::uniform_int_distribution<std::size_t> index(0, layout.padded_size() - 1);
  int checked = 0;
  const auto& score = layout.tensor("score.weight");
  for (std::size_t i = score.offset; i < score.offset + score.numel; i += 5) {
    EXPECT_NE(grads[i], 0.0) << "score.weight[" << i - score.offset << "]";
  }
  while (checked < 24) {
    const std::size_t i = index(pick);
    if (grads[i] == 0.0) continue;  // padding, or an embedding row no input uses
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
}

TEST_P(ScoreHead, RefusesPlainBackwardAndGenerationSayingWhy) {
  const ParamLayout layout(with_score(GetParam()), 1);
  std::vector<double> params = noisy_params(layout);
  std::vector<double> grads(layout.padded_size(), 0.0);
  BasicFlatUnitAccess<double> access(layout, params.data(), grads.data());
  const auto model = make_causal_lm<double>(layout, B, T);
  const auto inputs = random_tokens(B * T, V, 11);
  const auto marks = last_of_each_row();
  model->forward(access, inputs.data(), marks.data());
  const std::string backward = error_of([&] { model->backward(access, 1.0); });
  EXPECT_NE(backward.find("backward_weighted"), std::string::npos) << backward;
  const std::string generation = error_of(
      [&] { model->next_token_logits(access, std::span<const std::int32_t>(inputs.data(), 3)); });
  EXPECT_NE(generation.find("does not generate"), std::string::npos) << generation;
  EXPECT_THROW(model->reset_cache(), Error);
}

std::string config_name(const ::testing::TestParamInfo<ModelConfig>& param) {
  if (param.param.family == Family::gpt2) return "gpt2";
  if (param.param.final_softcap > 0) return "gemma2";
  return param.param.tie_word_embeddings ? "llama_tied" : "llama";
}

INSTANTIATE_TEST_SUITE_P(Families, ScoreHead,
                         ::testing::Values(ModelConfig::gpt2(2, 2, 16, T, V), llama_config(false),
                                           llama_config(true), gemma_config()),
                         config_name);

nlohmann::json qwen2_classifier_json() {
  return nlohmann::json::parse(R"({
    "architectures": ["Qwen2ForSequenceClassification"], "model_type": "qwen2",
    "vocab_size": 151, "hidden_size": 16, "intermediate_size": 24, "num_hidden_layers": 2,
    "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 64,
    "tie_word_embeddings": true, "id2label": {"0": "LABEL_0"}, "label2id": {"LABEL_0": 0},
    "pad_token_id": 150})");
}

TEST(ScoreHeadConfig, ReadsAClassifierFolderAsTheCausalModelWithTheScoreHead) {
  const ModelConfig c = read_hf_config(qwen2_classifier_json(), "config.json");
  EXPECT_TRUE(c.score_head);
  EXPECT_EQ(c.architecture, "Qwen2ForCausalLM");
  EXPECT_TRUE(c.qkv_bias);
  EXPECT_EQ(classifier_architecture(c), "Qwen2ForSequenceClassification");
  const nlohmann::ordered_json written = hf_config(c);
  EXPECT_EQ(written["architectures"], nlohmann::json::array({"Qwen2ForSequenceClassification"}));
  EXPECT_EQ(written["id2label"], nlohmann::json({{"0", "LABEL_0"}}));
  EXPECT_EQ(written["label2id"], nlohmann::json({{"LABEL_0", 0}}));
  EXPECT_EQ(read_hf_config(nlohmann::json::parse(written.dump()), "written"), c);
  EXPECT_NE(summary(c).find("score head (Qwen2ForSequenceClassification)"), std::string::npos)
      << summary(c);

  ModelConfig gpt2 = ModelConfig::gpt2(2, 2, 16, 32, 300);
  gpt2.score_head = true;
  const nlohmann::ordered_json gpt2_json = hf_config(gpt2);
  EXPECT_EQ(gpt2_json["architectures"][0], "GPT2ForSequenceClassification");
  EXPECT_EQ(read_hf_config(nlohmann::json::parse(gpt2_json.dump()), "gpt2"), gpt2);
  EXPECT_FALSE(hf_config(ModelConfig::gpt2(2, 2, 16, 32, 300)).contains("id2label"));
}

TEST(ScoreHeadConfig, RefusesAClassifierOfMoreThanOneLabelNamingTheFile) {
  nlohmann::json two = qwen2_classifier_json();
  two["id2label"] = {{"0", "NEGATIVE"}, {"1", "POSITIVE"}};
  std::string error = error_of([&] { read_hf_config(two, "rm/config.json"); });
  EXPECT_NE(error.find("rm/config.json: a sequence classifier with 2 labels"), std::string::npos)
      << error;
  two.erase("id2label");  // transformers' default: 2 labels
  error = error_of([&] { read_hf_config(two, "rm/config.json"); });
  EXPECT_NE(error.find("with 2 labels"), std::string::npos) << error;
  two["num_labels"] = 1;
  EXPECT_TRUE(read_hf_config(two, "rm/config.json").score_head);
}

TEST(ScoreHeadConfig, CheckpointsRecordTheScoreHead) {
  ModelConfig c = llama_config(false);
  EXPECT_FALSE(to_json(c).contains("score_head"));  // older checkpoints read the same
  c.score_head = true;
  EXPECT_TRUE(model_config_from_json(to_json(c)).score_head);
  EXPECT_EQ(to_json(model_config_from_json(to_json(c))), to_json(c));
}

}  // namespace
}  // namespace autotrain::model::score_head_test
