// Phi-3's description (model/family.hpp, src/model/phi3_family.cpp): config.json in and out,
// its fused tensors and their roles, the parameter count of Phi-4-mini's shape, and refusals.
// Its numbers against an independent PyTorch implementation are e2e.hf_phi3's.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>

#include "autotrain/core/error.hpp"
#include "autotrain/model/family.hpp"
#include "autotrain/model/llama.hpp"
#include "autotrain/model/param_layout.hpp"
#include "test_support.hpp"

namespace autotrain::model::phi3_test {
namespace {

// Phi-4-mini-instruct's shape (its config.json, with made-up longrope factors).
nlohmann::json phi4_mini_json() {
  nlohmann::json j = nlohmann::json::parse(R"({"architectures": ["Phi3ForCausalLM"],
      "model_type": "phi3", "hidden_size": 3072, "num_hidden_layers": 32,
      "num_attention_heads": 24, "num_key_value_heads": 8, "intermediate_size": 8192,
      "vocab_size": 200064, "max_position_embeddings": 131072,
      "original_max_position_embeddings": 4096, "partial_rotary_factor": 0.75,
      "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": true,
      "hidden_act": "silu", "sliding_window": 262144, "resid_pdrop": 0.0})");
  std::vector<double> short_factor(48, 1.0), long_factor(48, 2.0);
  for (std::size_t i = 0; i < 48; ++i) short_factor[i] += 0.01 * double(i);
  j["rope_scaling"] = {
      {"type", "longrope"}, {"short_factor", short_factor}, {"long_factor", long_factor}};
  return j;
}

TEST(Phi3Family, ReadsPhi4MiniAndWritesAConfigThatReadsBackTheSame) {
  const ModelConfig c = read_hf_config(phi4_mini_json(), "config.json");
  EXPECT_EQ(c.family, Family::llama);  // the Llama-style decoder runs it
  EXPECT_EQ(c.architecture, "Phi3ForCausalLM");
  EXPECT_EQ(c.head_size(), 128);
  EXPECT_EQ(c.rotary_size(), 96);
  EXPECT_EQ(c.kv_heads(), 8);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.rope_scaling.type, "longrope");
  EXPECT_EQ(c.rope_scaling.original_max_position_embeddings, 4096);
  EXPECT_DOUBLE_EQ(c.rope_scaling.factor, 32.0);
  EXPECT_DOUBLE_EQ(c.rope_scaling.attention_factor,
                   std::sqrt(1 + std::log(32.0) / std::log(4096.0)));
  EXPECT_EQ(family_of(c).describe(c), "Phi-3 (Phi3ForCausalLM)");
  EXPECT_EQ(ParamLayout(c).num_parameters(), 3836021760u);  // as transformers counts it
  const nlohmann::json written = nlohmann::json::parse(family_of(c).hf_config(c).dump());
  EXPECT_EQ(written["model_type"], "phi3");
  EXPECT_FALSE(written.contains("head_dim"));
  EXPECT_EQ(read_hf_config(written, "export"), c);
  EXPECT_EQ(model_config_from_json(to_json(c)), c);  // what a checkpoint records
}

TEST(Phi3Family, FusesQkvAndGateUpUnderPhi3NamesWithTheRolesTheDecoderReads) {
  nlohmann::json j = phi4_mini_json();
  j["hidden_size"] = 64, j["num_hidden_layers"] = 2, j["num_attention_heads"] = 4;
  j["num_key_value_heads"] = 2, j["intermediate_size"] = 96, j["vocab_size"] = 300;
  j.erase("rope_scaling");
  const ParamLayout layout(read_hf_config(j, "config.json"));
  const ParamTensor& qkv = layout.tensor("model.layers.1.self_attn.qkv_proj.weight");
  EXPECT_EQ(qkv.shape, (std::vector<std::int64_t>{(4 + 2 * 2) * 16, 64}));
  EXPECT_EQ(qkv.role, Role::qkv);
  const ParamTensor& gate_up = layout.tensor("model.layers.1.mlp.gate_up_proj.weight");
  EXPECT_EQ(gate_up.shape, (std::vector<std::int64_t>{2 * 96, 64}));
  EXPECT_EQ(layout.role_offset(2, Role::gate_up), layout.offset_in_unit(gate_up));
  EXPECT_EQ(layout.role_offset(2, Role::qkv_bias), ParamLayout::kNoTensor);
  EXPECT_THROW(layout.tensor("model.layers.0.self_attn.q_proj.weight"), Error);
  // A model on it runs (the decoder found every tensor by role).
  EXPECT_NO_THROW(LlamaModel(layout, 1, 8));
}

TEST(Phi3Family, RefusesWhatItDoesNotSupportNamingTheKeyAndValue) {
  const auto error = [](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json json = phi4_mini_json();
    edit(json);
    return testing::error_of([&] { (void)read_hf_config(json, "m/config.json"); });
  };
  EXPECT_NE(error([](auto& j) {
              j["partial_rotary_factor"] = 0.7;
            }).find("m/config.json: partial_rotary_factor 0.7 is not supported"),
            std::string::npos);
  EXPECT_NE(error([](auto& j) { j["head_dim"] = 96; }).find("head_dim 96 is not supported"),
            std::string::npos);
  EXPECT_NE(error([](auto& j) {
              j["rope_scaling"]["short_factor"] = {1.0, 2.0};
            }).find("rope_scaling.short_factor should be a list of 48 numbers"),
            std::string::npos);
  EXPECT_NE(error([](auto& j) {
              j["architectures"] = {"LlamaForCausalLM"};
            }).find("(expected [\"Phi3ForCausalLM\"]"),
            std::string::npos);
  // Positions that would need longrope's long_factor.
  nlohmann::json j = phi4_mini_json();
  j["hidden_size"] = 64, j["num_hidden_layers"] = 1, j["num_attention_heads"] = 4;
  j["num_key_value_heads"] = 2, j["intermediate_size"] = 32, j["vocab_size"] = 300;
  j["original_max_position_embeddings"] = 8;
  j["rope_scaling"]["short_factor"] = std::vector<double>(6, 1.0);
  j["rope_scaling"]["long_factor"] = std::vector<double>(6, 1.0);
  const ParamLayout layout(read_hf_config(j, "config.json"));
  EXPECT_NO_THROW(LlamaModel(layout, 1, 8));
  EXPECT_NE(testing::error_of([&] {
              LlamaModel(layout, 1, 9);
            }).find("9 positions exceed rope_scaling's original_max_position_embeddings of 8"),
            std::string::npos);
}

}  // namespace
}  // namespace autotrain::model::phi3_test
