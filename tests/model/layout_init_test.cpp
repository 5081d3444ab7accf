// ModelConfig validation, the flat parameter layout (names, shapes, units, shards) and the
// world-size-independent initialisation.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "autotrain/core/error.hpp"
#include "autotrain/model/config.hpp"
#include "autotrain/model/gpt2.hpp"
#include "autotrain/model/init.hpp"
#include "autotrain/model/param_layout.hpp"

namespace autotrain::model::layout_init_test {
namespace {

ModelConfig tiny() {
  return ModelConfig::gpt2(2, 2, 16, 8, 37);
}

TEST(ModelConfig, PadsVocabularyToMultipleOf128) {
  EXPECT_EQ(ModelConfig::gpt2_124m().padded_vocab_size, 50304);
  EXPECT_EQ(tiny().padded_vocab_size, 128);
  EXPECT_EQ(round_up_vocab(256), 256);
}

TEST(ModelConfig, RejectsEmbeddingNotDivisibleByHeadsNamingBothFields) {
  ModelConfig c = ModelConfig::gpt2(2, 3, 16, 8, 37);
  try {
    c.validate();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("n_embd (16)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("n_head (3)"), std::string::npos) << e.what();
  }
}

TEST(ModelConfig, RejectsPaddedVocabularySmallerThanVocabulary) {
  ModelConfig c = tiny();
  c.padded_vocab_size = 30;
  EXPECT_THROW(c.validate(), Error);
  c = tiny();
  c.n_layer = 0;
  EXPECT_THROW(c.validate(), Error);
}

TEST(ParamLayout, Gpt2SmallHasHuggingFaceParameterCount) {
  const ParamLayout layout(ModelConfig::gpt2_124m());
  EXPECT_EQ(layout.num_parameters(), 124439808u);  // GPT2LMHeadModel, tied head
  EXPECT_EQ(layout.num_units(), 14);
  const auto& qkv = layout.tensor("transformer.h.11.attn.c_attn.weight");
  EXPECT_EQ(qkv.shape, (std::vector<std::int64_t>{768, 2304}));  // Conv1D [in, out]
  EXPECT_EQ(qkv.unit, 12);
  EXPECT_EQ(layout.tensor("transformer.wte.weight").shape, (std::vector<std::int64_t>{50304, 768}));
}

TEST(ParamLayout, UnknownNameSuggestsTheClosestTensor) {
  const ParamLayout layout(tiny());
  try {
    layout.tensor("transformer.h.0.attn.c_atn.weight");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("transformer.h.0.attn.c_attn.weight"), std::string::npos)
        << e.what();
  }
}

TEST(ParamLayout, WeightDecayOnlyOnMatmulAndEmbeddingWeights) {
  const ParamLayout layout(tiny());
  for (const auto& t : layout.tensors()) {
    const bool is_bias = t.name.ends_with(".bias");
    const bool is_norm = t.name.find("ln_") != std::string::npos;
    EXPECT_EQ(t.weight_decay, !is_bias && !is_norm) << t.name;
  }
}

TEST(ParamLayout, UnitsArePaddedSoEveryRankOwnsAnEqualAlignedPart) {
  for (int world_size : {1, 2, 3, 4}) {
    const ParamLayout layout(tiny(), world_size, 16);
    std::size_t expected_offset = 0;
    for (int u = 0; u < layout.num_units(); ++u) {
      const ParamUnit& unit = layout.units()[u];
      EXPECT_EQ(unit.offset, expected_offset);
      EXPECT_EQ(unit.padded_numel % (16u * world_size), 0u);
      EXPECT_GE(unit.padded_numel, unit.numel);
      EXPECT_LT(unit.padded_numel - unit.numel, 16u * world_size);
      std::size_t next = unit.offset;
      for (int r = 0; r < world_size; ++r) {
        const Range shard = layout.shard(u, r);
        EXPECT_EQ(shard.offset, next);
        EXPECT_EQ(shard.size, unit.padded_numel / world_size);
        next += shard.size;
      }
      EXPECT_EQ(next, unit.offset + unit.padded_numel);
      expected_offset += unit.padded_numel;
    }
    EXPECT_EQ(layout.padded_size(), expected_offset);
    EXPECT_THROW(layout.shard(0, world_size), Error);
  }
}

TEST(ParamLayout, OffsetsInsideAUnitDoNotDependOnWorldSize) {
  const ParamLayout one(tiny(), 1), four(tiny(), 4);
  ASSERT_EQ(one.tensors().size(), four.tensors().size());
  for (std::size_t i = 0; i < one.tensors().size(); ++i) {
    EXPECT_EQ(one.offset_in_unit(one.tensors()[i]), four.offset_in_unit(four.tensors()[i]));
  }
}

TEST(Init, FillingInArbitraryPiecesEqualsFillingTheWholeBuffer) {
  const ParamLayout layout(tiny(), 3);
  std::vector<float> whole(layout.padded_size());
  init_params(layout, 42, whole);
  std::vector<float> pieces(layout.padded_size(), -1.0f);
  const std::size_t cuts[] = {0, 1, 17, 500, 4097, 4100, 8000, layout.padded_size()};
  for (std::size_t i = 0; i + 1 < std::size(cuts); ++i) {
    init_params(layout, 42, std::span<float>(pieces).subspan(cuts[i], cuts[i + 1] - cuts[i]),
                cuts[i]);
  }
  EXPECT_EQ(pieces, whole);
}

TEST(Init, TensorValuesDoNotDependOnWorldSize) {
  const ParamLayout one(tiny(), 1), four(tiny(), 4, 32);
  std::vector<float> a(one.padded_size()), b(four.padded_size());
  init_params(one, 7, a);
  init_params(four, 7, b);
  for (const auto& t : one.tensors()) {
    const auto& u = four.tensor(t.name);
    for (std::size_t i = 0; i < t.numel; ++i) {
      ASSERT_EQ(a[t.offset + i], b[u.offset + i]) << t.name << "[" << i << "]";
    }
  }
}

TEST(Init, FollowsGpt2RulesAndLeavesPaddingZero) {
  const ModelConfig config = ModelConfig::gpt2(4, 2, 64, 32, 300);
  const ParamLayout layout(config, 2);
  std::vector<float> p(layout.padded_size(), 9.0f);
  init_params(layout, 1, p);
  auto stddev = [&](const std::string& name) {
    const auto& t = layout.tensor(name);
    double s = 0, s2 = 0;
    for (std::size_t i = 0; i < t.numel; ++i) {
      s += p[t.offset + i];
      s2 += static_cast<double>(p[t.offset + i]) * p[t.offset + i];
    }
    const double m = s / t.numel;
    EXPECT_NEAR(m, 0.0, 0.002) << name;
    return std::sqrt(s2 / t.numel - m * m);
  };
  EXPECT_NEAR(stddev("transformer.h.0.attn.c_attn.weight"), 0.02, 0.001);
  EXPECT_NEAR(stddev("transformer.h.1.mlp.c_fc.weight"), 0.02, 0.001);
  EXPECT_NEAR(stddev("transformer.h.2.mlp.c_proj.weight"), 0.02 / std::sqrt(8.0), 0.0005);
  EXPECT_NEAR(stddev("transformer.h.3.attn.c_proj.weight"), 0.02 / std::sqrt(8.0), 0.0005);
  for (const auto& t : layout.tensors()) {
    const bool bias = t.name.ends_with(".bias");
    const bool norm_weight = !bias && t.name.find("ln_") != std::string::npos;
    for (std::size_t i = 0; i < t.numel; ++i) {
      if (bias) {
        ASSERT_EQ(p[t.offset + i], 0.0f) << t.name;
      }
      if (norm_weight) {
        ASSERT_EQ(p[t.offset + i], 1.0f) << t.name;
      }
    }
  }
  const auto& wte = layout.tensor("transformer.wte.weight");
  for (std::size_t i = 300 * 64; i < wte.numel; ++i) ASSERT_EQ(p[wte.offset + i], 0.0f);
  for (const auto& unit : layout.units()) {
    for (std::size_t i = unit.numel; i < unit.padded_numel; ++i) {
      ASSERT_EQ(p[unit.offset + i], 0.0f) << unit.name;
    }
  }
}

TEST(Init, DifferentSeedsGiveDifferentWeights) {
  const ParamLayout layout(tiny());
  std::vector<float> a(layout.padded_size()), b(layout.padded_size());
  init_params(layout, 1, a);
  init_params(layout, 2, b);
  EXPECT_NE(a, b);
}

TEST(Init, RejectsARangePastTheBuffer) {
  const ParamLayout layout(tiny());
  std::vector<float> out(10);
  EXPECT_THROW(init_params(layout, 1, out, layout.padded_size() - 5), Error);
}

TEST(FlopsPerToken, IsSixNPlusAttentionTerm) {
  const ModelConfig c = ModelConfig::gpt2_124m();
  EXPECT_DOUBLE_EQ(flops_per_token(c, 1024), 6.0 * 124439808 + 6.0 * 12 * 768 * 1024);
}

}  // namespace
}  // namespace autotrain::model::layout_init_test
