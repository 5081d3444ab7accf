// The host side of the device models' attention choice (kernels/attention_choice.hpp), on any
// machine: AUTOTRAIN_CUDA_ATTENTION's values, the path each kind takes given what applies, the
// cuDNN plan cache's key, and the strides that read Q, K, V, O and the statistics from our
// buffers (checked element by element against the layouts' own index formulas).
#include "autotrain/kernels/attention_choice.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <string>

#include "autotrain/core/error.hpp"

namespace autotrain::kernels::attention_choice_test {
namespace {

TEST(AttentionChoice, ParsesEveryKindAndRejectsOthersNamingTheValue) {
  EXPECT_EQ(parse_attention_kind(nullptr), AttentionKind::automatic);
  EXPECT_EQ(parse_attention_kind(""), AttentionKind::automatic);
  EXPECT_EQ(parse_attention_kind("auto"), AttentionKind::automatic);
  EXPECT_EQ(parse_attention_kind("fast"), AttentionKind::fast);
  EXPECT_EQ(parse_attention_kind("reference"), AttentionKind::reference);
  EXPECT_EQ(parse_attention_kind("flash"), AttentionKind::flash);
  EXPECT_EQ(parse_attention_kind("cudnn"), AttentionKind::cudnn);
  try {
    parse_attention_kind("cuDNN");
    FAIL() << "an unknown value was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'cuDNN'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'cudnn'"), std::string::npos) << e.what();
  }
}

TEST(AttentionChoice, ParsesTheCudnnBackwardsDeterminism) {
  EXPECT_TRUE(parse_cudnn_deterministic(nullptr));
  EXPECT_TRUE(parse_cudnn_deterministic(""));
  EXPECT_TRUE(parse_cudnn_deterministic("1"));
  EXPECT_TRUE(parse_cudnn_deterministic("true"));
  EXPECT_FALSE(parse_cudnn_deterministic("0"));
  EXPECT_FALSE(parse_cudnn_deterministic("false"));
  try {
    parse_cudnn_deterministic("yes");
    FAIL() << "an unknown value was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("AUTOTRAIN_CUDNN_DETERMINISTIC = 'yes'"),
              std::string::npos)
        << e.what();
  }
}

// cuDNN's fused attention is opt-in until a GPU has checked it: the default never takes it.
TEST(AttentionChoice, AutomaticTakesFlashThenTheFastPathNeverCudnn) {
  EXPECT_EQ(choose_attention(AttentionKind::automatic, true, "").path, AttentionPath::flash);
  EXPECT_EQ(choose_attention(AttentionKind::automatic, false, "").path, AttentionPath::unfused);
  const AttentionChoice unfused = choose_attention(AttentionKind::automatic, false, "fp32");
  EXPECT_NE(unfused.why.find("flash kernels need"), std::string::npos) << unfused.why;
}

TEST(AttentionChoice, AKindAskedForRunsWhereItAppliesAndFallsBackOtherwise) {
  EXPECT_EQ(choose_attention(AttentionKind::cudnn, true, "").path, AttentionPath::cudnn);
  const AttentionChoice refused = choose_attention(AttentionKind::cudnn, true, "no cuDNN");
  EXPECT_EQ(refused.path, AttentionPath::flash);
  EXPECT_NE(refused.why.find("AUTOTRAIN_CUDA_ATTENTION=cudnn"), std::string::npos);
  EXPECT_EQ(choose_attention(AttentionKind::cudnn, false, "no cuDNN").path, AttentionPath::unfused);
  // flash, fast and reference never run cuDNN, even where its plans built.
  EXPECT_EQ(choose_attention(AttentionKind::flash, true, "").path, AttentionPath::flash);
  EXPECT_EQ(choose_attention(AttentionKind::flash, false, "").path, AttentionPath::unfused);
  EXPECT_EQ(choose_attention(AttentionKind::fast, true, "").path, AttentionPath::unfused);
  EXPECT_EQ(choose_attention(AttentionKind::reference, true, "").path, AttentionPath::unfused);
  EXPECT_FALSE(attention_tries_cudnn(AttentionKind::automatic));
  EXPECT_TRUE(attention_tries_cudnn(AttentionKind::cudnn));
  EXPECT_FALSE(attention_tries_cudnn(AttentionKind::flash));
  EXPECT_FALSE(attention_tries_cudnn(AttentionKind::fast));
}

TEST(AttentionChoice, ShapeResolvesTheScaleAndKeysOnEveryField) {
  const SdpaShape gpt2 = sdpa_shape(true, 16, 1024, 12, 12, 64, {});
  EXPECT_FLOAT_EQ(gpt2.scale, 0.125f);
  EXPECT_EQ(gpt2.softcap, 0.0f);
  EXPECT_EQ(gpt2.window, 0);
  EXPECT_TRUE(gpt2.deterministic) << "the same bits on every run unless asked otherwise";
  AttentionOptions gemma;
  gemma.scale = 1 / std::sqrt(256.0);
  gemma.softcap = 50;
  gemma.window = 4096;
  const SdpaShape g = sdpa_shape(false, 1, 8192, 16, 8, 128, gemma);
  EXPECT_FLOAT_EQ(g.scale, 0.0625f);
  EXPECT_FLOAT_EQ(g.softcap, 50.0f);
  EXPECT_EQ(g.window, 4096);
  EXPECT_NE(g.describe().find("fp16"), std::string::npos) << g.describe();
  EXPECT_NE(g.describe().find("window=4096"), std::string::npos) << g.describe();
  EXPECT_NE(g.describe().find("softcap=50"), std::string::npos) << g.describe();

  // Each field alone makes another key.
  std::map<SdpaShape, int> plans;
  plans[gpt2] = 0;
  const auto changed = [&](auto change) {
    SdpaShape s = gpt2;
    change(s);
    return s;
  };
  const SdpaShape others[] = {
      changed([](SdpaShape& s) { s.B = 8; }),
      changed([](SdpaShape& s) { s.T = 512; }),
      changed([](SdpaShape& s) { s.NH = 16; }),
      changed([](SdpaShape& s) { s.NKV = 4; }),
      changed([](SdpaShape& s) { s.HS = 128; }),
      changed([](SdpaShape& s) { s.bf16 = false; }),
      changed([](SdpaShape& s) { s.scale = 1; }),
      changed([](SdpaShape& s) { s.softcap = 30; }),
      changed([](SdpaShape& s) { s.window = 128; }),
      changed([](SdpaShape& s) { s.deterministic = false; }),
  };
  for (const SdpaShape& other : others) {
    EXPECT_FALSE(other == gpt2) << other.describe();
    EXPECT_TRUE(other < gpt2 || gpt2 < other) << other.describe();
    plans[other] = 1;
  }
  EXPECT_EQ(plans.size(), 11u);
  EXPECT_TRUE(sdpa_shape(true, 16, 1024, 12, 12, 64, {}) == gpt2);
}

TEST(AttentionChoice, RefusesShapesCudnnCannotTakeBeforeAskingIt) {
  EXPECT_EQ(sdpa_shape_refusal(sdpa_shape(true, 16, 1024, 12, 12, 64, {})), "");
  EXPECT_EQ(sdpa_shape_refusal(sdpa_shape(true, 1, 1, 32, 8, 128, {})), "");
  EXPECT_EQ(sdpa_shape_refusal(sdpa_shape(true, 1, 7, 4, 2, 96, {})), "");
  EXPECT_NE(sdpa_shape_refusal(sdpa_shape(true, 1, 7, 12, 5, 64, {})), "");
  EXPECT_NE(sdpa_shape_refusal(sdpa_shape(true, 1, 7, 4, 2, 20, {})), "");
  EXPECT_NE(sdpa_shape_refusal(sdpa_shape(true, 1, 7, 4, 2, 264, {})), "");
  EXPECT_NE(sdpa_shape_refusal(sdpa_shape(true, 0, 7, 4, 2, 64, {})), "");
}

// The element (b, h, t, d) of a layout, by its strides.
std::int64_t at(const SdpaLayout& layout, std::int64_t b, std::int64_t h, std::int64_t t,
                std::int64_t d) {
  return layout.offset + b * layout.strides[0] + h * layout.strides[1] + t * layout.strides[2] +
         d * layout.strides[3];
}

TEST(AttentionChoice, LayoutsReadQkvOutAndStatisticsInPlace) {
  const int B = 2, T = 5, NH = 6, NKV = 2, HS = 8;
  const SdpaShape s = sdpa_shape(true, B, T, NH, NKV, HS, {});
  const std::int64_t W = (NH + 2 * NKV) * HS, C = NH * HS;
  const SdpaLayout q = sdpa_q_layout(s), k = sdpa_k_layout(s), v = sdpa_v_layout(s);
  const SdpaLayout o = sdpa_o_layout(s), stats = sdpa_stats_layout(s);
  EXPECT_EQ(q.dims, (std::array<std::int64_t, 4>{B, NH, T, HS}));
  EXPECT_EQ(k.dims, (std::array<std::int64_t, 4>{B, NKV, T, HS}));
  EXPECT_EQ(v.dims, (std::array<std::int64_t, 4>{B, NKV, T, HS}));
  EXPECT_EQ(o.dims, (std::array<std::int64_t, 4>{B, NH, T, HS}));
  EXPECT_EQ(stats.dims, (std::array<std::int64_t, 4>{B, NH, T, 1}));
  for (int b = 0; b < B; ++b) {
    for (int t = 0; t < T; ++t) {
      const std::int64_t row = (static_cast<std::int64_t>(b) * T + t) * W;
      for (int d = 0; d < HS; ++d) {
        for (int h = 0; h < NH; ++h) {
          ASSERT_EQ(at(q, b, h, t, d), row + h * HS + d);
          ASSERT_EQ(at(o, b, h, t, d), (static_cast<std::int64_t>(b) * T + t) * C + h * HS + d);
        }
        for (int h = 0; h < NKV; ++h) {
          ASSERT_EQ(at(k, b, h, t, d), row + (NH + h) * HS + d);
          ASSERT_EQ(at(v, b, h, t, d), row + (NH + NKV + h) * HS + d);
          // Kᵀ [B, NKV, HS, T] reads the same element at (d, t).
          ASSERT_EQ(at(sdpa_transposed(k), b, h, d, t), at(k, b, h, t, d));
        }
      }
      for (int h = 0; h < NH; ++h) {
        ASSERT_EQ(at(stats, b, h, t, 0), (static_cast<std::int64_t>(b) * NH + h) * T + t);
      }
    }
  }
  // The last element of each stays inside its buffer.
  EXPECT_EQ(at(v, B - 1, NKV - 1, T - 1, HS - 1), B * T * W - 1);
  EXPECT_EQ(at(o, B - 1, NH - 1, T - 1, HS - 1), B * T * C - 1);
  const SdpaLayout kt = sdpa_transposed(k);
  EXPECT_EQ(kt.dims, (std::array<std::int64_t, 4>{B, NKV, HS, T}));
  EXPECT_EQ(kt.strides, (std::array<std::int64_t, 4>{T * W, HS, 1, W}));
}

}  // namespace
}  // namespace autotrain::kernels::attention_choice_test
