// The Llama-style decoder and the Llama family's description on tiny shapes (L = 2, NH = 4 over
// NKV = 2 heads, C = 16, D = 6, I = 24, V = 37, T = 8, B = 2): gradients against finite
// differences, the hook order of tied and untied heads, cached decoding, and config.json in and
// out; the decoder also with Gemma 2's and Gemma 3's changes (sliding windows shorter than T).
// Its agreement with an independent PyTorch implementation is e2e.hf_llama's and e2e.hf_gemma's.
#include "autotrain/model/llama.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "autotrain/core/error.hpp"
#include "autotrain/model/family.hpp"
#include "autotrain/model/init.hpp"
#include "autotrain/model/param_layout.hpp"
#include "model_test_support.hpp"
#include "test_support.hpp"

namespace autotrain::model::llama_test {
namespace {

constexpr int B = 2, T = 8, V = 37;

// Qwen3's options (q/k norms, a head_dim other than C/NH, q/k/v biases as Qwen2's) and llama3
// rope scaling, so one model exercises every path.
ModelConfig tiny(bool tied) {
  ModelConfig c = ModelConfig::gpt2(2, 4, 16, 64, V);
  c.family = Family::llama;
  c.architecture = "Qwen3ForCausalLM";
  c.n_kv_head = 2;
  c.head_dim = 6;
  c.intermediate_size = 24;
  c.tie_word_embeddings = tied;
  c.qkv_bias = true;
  c.qk_norm = true;
  c.rope_theta = 100;
  c.rope_scaling = {"llama3", 4, 1, 4, 16, {}, {}, 1};
  return c;
}

// The decoder variants the model tests run: Qwen3-like untied and tied heads, and Gemma 2's and
// Gemma 3's changes to the block on the same shapes (windows of 3 in the first layer).
enum Variant { untied, tied, gemma2, gemma3 };

ModelConfig variant(Variant v) {
  ModelConfig c = tiny(v != untied);
  if (v == gemma2 || v == gemma3) {
    c.architecture = v == gemma2 ? "Gemma2ForCausalLM" : "Gemma3ForCausalLM";
    c.qk_norm = v == gemma3;
    c.gate = GateActivation::gelu_tanh;
    c.norm_offset = c.embed_scale = c.sandwich_norms = true;
    c.query_pre_attn_scalar = 9;
    c.attn_softcap = v == gemma2 ? 2 : 0;  // small, so that the cap bends the scores
    c.final_softcap = v == gemma2 ? 3 : 0;
    c.sliding_window = 3;
    c.sliding_layers = {true, false};
    c.rope_local_theta = v == gemma3 ? 10 : 0;
    if (v == gemma3) c.rope_scaling = {"linear", 2, 1, 4, 16, {}, {}, 1};
  }
  return c;
}

std::vector<std::int32_t> random_tokens(std::size_t n, std::uint32_t seed) {
  return model::random_tokens(n, V, seed);
}

// Random parameters large enough that every path carries a gradient well above round-off.
template <typename F>
std::vector<F> noisy_params(const ParamLayout& layout, std::uint32_t seed) {
  std::vector<float> p(layout.padded_size());
  init_params(layout, seed, p);
  std::vector<F> out(p.begin(), p.end());
  std::mt19937 gen(seed);
  std::normal_distribution<double> noise(0.0, 0.3);
  for (const auto& t : layout.tensors()) {
    for (std::size_t i = 0; i < t.file_numel(); ++i) out[t.offset + i] += F(noise(gen));
  }
  return out;
}

class LlamaModelTest : public ::testing::TestWithParam<Variant> {};

TEST_P(LlamaModelTest, GradientsOfEveryTensorMatchFiniteDifferencesInDouble) {
  const ParamLayout layout(variant(GetParam()), 2);
  std::vector<double> params = noisy_params<double>(layout, 3);
  std::vector<double> grads(layout.padded_size(), 0.0);
  BasicFlatUnitAccess<double> access(layout, params.data(), grads.data());
  BasicLlama<double> model(layout, B, T);
  const auto inputs = random_tokens(B * T, 11), targets = random_tokens(B * T, 12);
  model.forward(access, inputs.data(), targets.data());
  model.backward(access, 1.0);
  std::mt19937 pick(9);
  for (const auto& t : layout.tensors()) {
    std::uniform_int_distribution<std::size_t> index(0, t.file_numel() - 1);
    for (int k = 0; k < 4; ++k) {
      const std::size_t i = t.offset + index(pick);
      const double saved = params[i], h = 1e-5;
      params[i] = saved + h;
      const double plus = model.forward(access, inputs.data(), targets.data());
      params[i] = saved - h;
      const double minus = model.forward(access, inputs.data(), targets.data());
      params[i] = saved;
      const double numeric = (plus - minus) / (2 * h);
      EXPECT_NEAR(grads[i], numeric, 1e-8 + 1e-6 * std::abs(numeric))
          << t.name << "[" << i - t.offset << "]";
    }
    for (std::size_t i = t.file_numel(); i < t.numel; ++i) {  // padded vocabulary rows
      ASSERT_EQ(grads[t.offset + i], 0.0) << t.name << " padded element " << i;
    }
  }
}

TEST_P(LlamaModelTest, CallsTheFamilysHookOrderAndNeverUsesReleasedParameters) {
  const bool tied = GetParam() != untied;
  const ParamLayout layout(variant(GetParam()),
                           2);  // units 0 (embeddings), 1, 2 (blocks), 3 (norm)
  const auto params = noisy_params<float>(layout, 8);
  const auto inputs = random_tokens(B * T, 11), targets = random_tokens(B * T, 12);
  LlamaModel model(layout, B, T);
  GatheringAccess gathering(layout, params);
  const float loss = model.forward(gathering, inputs.data(), targets.data());
  std::vector<std::string> forward = {"params(0)", "release(0)", "params(1)", "release(1)",
                                      "params(2)", "release(2)", "params(3)", "release(3)"};
  if (tied) forward.insert(forward.end(), {"params(0)", "release(0)"});
  EXPECT_EQ(gathering.calls, forward);
  gathering.calls.clear();
  model.backward(gathering, 1.0f);
  std::vector<std::string> backward;
  if (tied) backward = {"params(0)", "grads(0)", "release(0)"};
  backward.insert(backward.end(),
                  {"params(3)", "grads(3)", "release(3)", "grads_ready(3)", "params(2)", "grads(2)",
                   "release(2)", "grads_ready(2)", "params(1)", "grads(1)", "release(1)",
                   "grads_ready(1)", "grads(0)", "grads_ready(0)"});
  EXPECT_EQ(gathering.calls, backward);
  // The layout's hook order is what the model did (the stage-3 gather schedule trusts it).
  std::vector<int> asked;
  for (const auto& call : forward) {
    if (call.starts_with("params(")) asked.push_back(call[7] - '0');
  }
  EXPECT_EQ(layout.hook_order().inference, asked);

  auto flat_params = params;
  std::vector<float> grads(params.size(), 0.0f);
  FlatUnitAccess flat(layout, flat_params.data(), grads.data());
  EXPECT_EQ(model.forward(flat, inputs.data(), targets.data()), loss);
  model.backward(flat, 1.0f);
  for (int u = 0; u < layout.num_units(); ++u) {
    const auto& unit = layout.units()[std::size_t(u)];
    for (std::size_t i = 0; i < unit.padded_numel; ++i) {
      ASSERT_EQ(gathering.unit_grads_[std::size_t(u)][i], grads[unit.offset + i]) << unit.name;
    }
  }
}

TEST_P(LlamaModelTest, CachedGenerationGivesTheLogitsOfTheFullForwardAtEveryPosition) {
  const ParamLayout layout(variant(GetParam()));
  const auto params = noisy_params<float>(layout, 9);
  FlatUnitAccess access(layout, params.data(), nullptr);
  LlamaModel model(layout, 1, 1);
  const auto tokens = random_tokens(20, 21);
  model.reset_cache();
  for (std::size_t t = 0; t < tokens.size(); ++t) {
    const auto cached = model.feed_token(access, tokens[t]);
    const std::vector<float> got(cached.begin(), cached.end());
    const auto full = model.next_token_logits(access, std::span(tokens.data(), t + 1));
    ASSERT_EQ(got.size(), std::size_t(V));
    for (std::size_t v = 0; v < got.size(); ++v) {
      ASSERT_NEAR(got[v], full[v], 1e-4) << "position " << t << ", logit " << v;
    }
  }
}

// A prefilled cache (the prompt as one context) continues as feeding it token by token would,
// for every variant (Qwen3's q/k norms; Gemma 2's and 3's windows, soft caps and local rope).
TEST_P(LlamaModelTest, PrefillLeavesTheCacheOfFeedingTheTokensOneByOne) {
  const ParamLayout layout(variant(GetParam()));
  const auto params = noisy_params<float>(layout, 9);
  FlatUnitAccess access(layout, params.data(), nullptr);
  LlamaModel fed(layout, 1, 1);
  const auto tokens = random_tokens(20, 23);
  fed.reset_cache();
  std::vector<std::vector<float>> expected;
  for (const std::int32_t token : tokens) {
    const auto logits = fed.feed_token(access, token);
    expected.emplace_back(logits.begin(), logits.end());
  }
  for (const std::size_t split : {std::size_t(1), std::size_t(7), tokens.size()}) {
    LlamaModel prefilled(layout, 1, 1);  // a fresh cache: no rows left from another split
    prefilled.reset_cache();
    const auto first = prefilled.prefill(access, std::span(tokens.data(), split));
    std::vector<float> got(first.begin(), first.end());
    for (std::size_t t = split - 1; t < tokens.size(); ++t) {
      if (t >= split) {
        const auto logits = prefilled.feed_token(access, tokens[t]);
        got.assign(logits.begin(), logits.end());
      }
      for (std::size_t v = 0; v < got.size(); ++v) {
        ASSERT_NEAR(got[v], expected[t][v], 1e-4)
            << "prefill of " << split << ", position " << t << ", logit " << v;
      }
    }
  }
}

TEST_P(LlamaModelTest, ProfileNamesItsNormAndActivationRowsRmsnormAndTheGate) {
  const ParamLayout layout(variant(GetParam()));
  const auto params = noisy_params<float>(layout, 4);
  std::vector<float> grads(params.size(), 0.0f);
  FlatUnitAccess access(layout, params.data(), grads.data());
  LlamaModel model(layout, B, T);
  model.set_profiling(true);
  const auto inputs = random_tokens(B * T, 5), targets = random_tokens(B * T, 6);
  model.forward(access, inputs.data(), targets.data());
  model.backward(access, 1.0f);
  const auto rows = model.profile();
  ASSERT_EQ(rows.size(), std::size_t(kOpCount));
  EXPECT_EQ(rows[kNorm].name, "rmsnorm");
  EXPECT_EQ(rows[kActivation].name, GetParam() >= gemma2 ? "geglu" : "swiglu");
  EXPECT_GT(rows[kNorm].forward_s, 0.0);
  EXPECT_GT(rows[kActivation].backward_s, 0.0);
}

std::string variant_name(const ::testing::TestParamInfo<Variant>& info) {
  constexpr const char* kNames[] = {"untied", "tied", "gemma2", "gemma3"};
  return kNames[info.param];
}
INSTANTIATE_TEST_SUITE_P(Variants, LlamaModelTest, ::testing::Values(untied, tied, gemma2, gemma3),
                         variant_name);

// Position t sees only its window: with windows of 2 in both layers, the last position's logits
// depend on positions 5..7 and on nothing before.
TEST(LlamaModel, ASlidingWindowHidesThePositionsBeyondItFromTheLogits) {
  ModelConfig c = variant(gemma2);
  c.sliding_layers.clear();  // every layer
  c.sliding_window = 2;
  const ParamLayout layout(c);
  const auto params = noisy_params<float>(layout, 4);
  FlatUnitAccess access(layout, params.data(), nullptr);
  LlamaModel model(layout, 1, T);
  auto tokens = random_tokens(T, 7);
  const auto first = model.next_token_logits(access, tokens);
  const std::vector<float> before(first.begin(), first.end());
  tokens[4] = (tokens[4] + 1) % V;  // outside position 7's field
  const auto second = model.next_token_logits(access, tokens);
  for (std::size_t v = 0; v < before.size(); ++v) ASSERT_EQ(before[v], second[v]) << v;
  tokens[6] = (tokens[6] + 1) % V;  // inside it
  const auto third = model.next_token_logits(access, tokens);
  EXPECT_NE(std::vector<float>(third.begin(), third.end()), before);
}

nlohmann::json qwen2_json() {
  return nlohmann::json::parse(R"({"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2",
      "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
      "num_key_value_heads": 2, "intermediate_size": 96, "vocab_size": 1000,
      "max_position_embeddings": 512, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
      "tie_word_embeddings": true, "hidden_act": "silu", "use_sliding_window": false,
      "sliding_window": 512})");
}

TEST(LlamaFamily, ReadsConfigJsonAndWritesOneThatReadsBackTheSame) {
  const ModelConfig c = read_hf_config(qwen2_json(), "config.json");
  EXPECT_EQ(c.family, Family::llama);
  EXPECT_EQ(c.architecture, "Qwen2ForCausalLM");
  EXPECT_EQ(c.kv_heads(), 2);
  EXPECT_EQ(c.head_size(), 16);
  EXPECT_TRUE(c.qkv_bias);  // Qwen2's, always
  EXPECT_FALSE(c.o_bias);
  EXPECT_EQ(c.sliding_window, 0);  // use_sliding_window false
  EXPECT_EQ(c.padded_vocab_size, 1024);
  const nlohmann::json written = nlohmann::json::parse(family_of(c).hf_config(c).dump());
  EXPECT_EQ(read_hf_config(written, "export"), c);
  EXPECT_EQ(model_config_from_json(to_json(c)), c);  // what a checkpoint records
}

// YaRN as transformers reads it (its angles against PyTorch: tests/e2e/hf_llama.sh).
TEST(LlamaFamily, ReadsYarnWithTheFactorOfTheOriginalContextAndWritesItBack) {
  nlohmann::json json = qwen2_json();
  json["rope_scaling"] = {
      {"rope_type", "yarn"}, {"factor", 8.0}, {"original_max_position_embeddings", 128}};
  const ModelConfig c = read_hf_config(json, "config.json");
  EXPECT_EQ(c.rope_scaling.type, "yarn");
  EXPECT_EQ(c.rope_scaling.factor, 4.0);  // 512 / 128, not the 8 given
  EXPECT_NEAR(c.rope_scaling.attention_factor, 0.1 * std::log(4.0) + 1, 1e-15);
  const nlohmann::json written = nlohmann::json::parse(family_of(c).hf_config(c).dump());
  EXPECT_EQ(written["rope_scaling"]["original_max_position_embeddings"], 128);
  EXPECT_EQ(read_hf_config(written, "export"), c);
  EXPECT_EQ(model_config_from_json(to_json(c)), c);

  // Without original_max_position_embeddings the factor stands; mscale / mscale_all_dim.
  json["rope_scaling"] = {{"type", "yarn"},        {"factor", 8.0},     {"mscale", 2.0},
                          {"mscale_all_dim", 1.0}, {"beta_fast", 16.0}, {"truncate", false}};
  const ModelConfig d = read_hf_config(json, "config.json");
  EXPECT_EQ(d.rope_scaling.factor, 8.0);
  EXPECT_EQ(d.rope_scaling.original_max_position_embeddings, 512);
  EXPECT_NEAR(d.rope_scaling.attention_factor,
              (0.2 * std::log(8.0) + 1) / (0.1 * std::log(8.0) + 1), 1e-15);
  const nlohmann::json exported = nlohmann::json::parse(family_of(d).hf_config(d).dump());
  EXPECT_FALSE(exported["rope_scaling"].contains("original_max_position_embeddings"));
  EXPECT_EQ(read_hf_config(exported, "export"), d);
  EXPECT_EQ(model_config_from_json(to_json(d)), d);
}

// Gemma 1 (google/gemma-2b's config.json, 2 layers): Gemma's scale, offsets and GeGLU on Llama's
// block, and back through the export and a checkpoint.
TEST(LlamaFamily, ReadsGemmaOneAsLlamasBlockWithGemmasChanges) {
  const nlohmann::json json = nlohmann::json::parse(R"({"architectures": ["GemmaForCausalLM"],
      "model_type": "gemma", "hidden_size": 2048, "intermediate_size": 16384,
      "num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": 1, "head_dim": 256,
      "hidden_act": "gelu", "hidden_activation": "gelu_pytorch_tanh", "max_position_embeddings": 8192,
      "rms_norm_eps": 1e-06, "rope_theta": 10000.0, "vocab_size": 256000, "attention_bias": false,
      "bos_token_id": 2, "eos_token_id": 1, "pad_token_id": 0})");
  const ModelConfig c = read_hf_config(json, "config.json");
  EXPECT_EQ(c.architecture, "GemmaForCausalLM");
  EXPECT_TRUE(c.norm_offset && c.embed_scale && c.tie_word_embeddings);
  EXPECT_FALSE(c.sandwich_norms || c.qk_norm);
  EXPECT_EQ(c.gate, GateActivation::gelu_tanh);  // hidden_activation wins over hidden_act
  EXPECT_EQ(c.attn_softcap, 0);
  EXPECT_EQ(c.final_softcap, 0);
  EXPECT_EQ(c.window(0), 0);
  EXPECT_EQ(c.head_size(), 256);
  EXPECT_EQ(summary(c).substr(0, 26), "Gemma (GemmaForCausalLM): ");
  const nlohmann::json written = nlohmann::json::parse(family_of(c).hf_config(c).dump());
  EXPECT_EQ(written["model_type"], "gemma");
  EXPECT_FALSE(written.contains("layer_types"));
  EXPECT_EQ(read_hf_config(written, "export"), c);
  EXPECT_EQ(model_config_from_json(to_json(c)), c);
}

TEST(LlamaFamily, CountsTheParametersOfTheRealModels) {
  const auto count = [](const char* model) {
    std::ifstream in(testing::source_path(cat("data/models/", model, "/config.json")));
    const ModelConfig c = read_hf_config(nlohmann::json::parse(in), model);
    return ParamLayout(c).num_parameters();
  };
  EXPECT_EQ(count("meta-llama--Llama-3.2-1B"), 1235814400u);  // as transformers counts it
  EXPECT_EQ(count("Qwen--Qwen3-0.6B"), 596049920u);
  EXPECT_EQ(count("google--gemma-3-1b-pt"), 999885952u);
}

TEST(LlamaFamily, RefusesWhatItDoesNotSupportNamingTheKeyAndValue) {
  const auto error = [](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json json = qwen2_json();
    edit(json);
    return testing::error_of([&] { (void)read_hf_config(json, "m/config.json"); });
  };
  EXPECT_NE(error([](auto& j) {
              j["rope_scaling"] = {{"rope_type", "dynamic"}, {"factor", 2.0}};
            }).find("m/config.json: rope_scaling type \"dynamic\" is not supported"),
            std::string::npos);
  EXPECT_NE(error([](auto& j) {
              j["rope_scaling"] = {{"rope_type", "yarn"}};
            }).find("m/config.json: rope_scaling {\"rope_type\":\"yarn\"} has no factor"),
            std::string::npos);
  EXPECT_NE(error([](auto& j) {
              j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}, {"beta_fast", 1.0}};
            })
                .find("is not valid (expected factor > 0, attention_factor > 0, beta_fast > "
                      "beta_slow > 0)"),
            std::string::npos);
  EXPECT_NE(error([](auto& j) { j["architectures"] = {"LlamaForCausalLM"}; })
                .find("architectures [\"LlamaForCausalLM\"] is not supported (expected "
                      "[\"Qwen2ForCausalLM\"]"),
            std::string::npos);
  EXPECT_NE(error([](auto& j) {
              j["num_key_value_heads"] = 3;
            }).find("num_attention_heads 4 is not a multiple of num_key_value_heads 3"),
            std::string::npos);
  EXPECT_NE(error([](auto& j) {
              j.erase("intermediate_size");
            }).find("m/config.json: key 'intermediate_size' is missing"),
            std::string::npos);
  EXPECT_NE(
      error([](auto& j) { j["model_type"] = "mamba"; }).find("model_type \"mamba\": not supported"),
      std::string::npos);
  EXPECT_NE(error([](auto& j) {
              j["hidden_act"] = "gelu";
            }).find("hidden_act \"gelu\" is not supported (expected silu or gelu_pytorch_tanh)"),
            std::string::npos);
  // Out of range, these would give NaN angles or a division by zero in every norm.
  EXPECT_NE(error([](auto& j) {
              j["rope_theta"] = 0.0;
            }).find("m/config.json: rope_theta 0 is out of range (expected a number above 1"),
            std::string::npos);
  EXPECT_NE(error([](auto& j) { j["rope_theta"] = -10000.0; }).find("rope_theta -10000 is out"),
            std::string::npos);
  EXPECT_NE(error([](auto& j) {
              j["rms_norm_eps"] = 0.0;
            }).find("m/config.json: rms_norm_eps 0 is out of range (expected a number in (0, 1)"),
            std::string::npos);
  EXPECT_NE(error([](auto& j) { j["rms_norm_eps"] = 2.0; }).find("rms_norm_eps 2 is out"),
            std::string::npos);
}

}  // namespace
}  // namespace autotrain::model::llama_test
