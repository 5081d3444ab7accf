// The Llama-style decoder's kernels (RMSNorm with and without Gemma's weight offset, RoPE,
// SwiGLU and GeGLU, grouped-query attention with and without Gemma's options, torch.nn.Linear
// layout): every forward against a naive reference written here, every backward against central
// finite differences in double of a random linear functional of the output. Shapes are tiny.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "attention_reference.hpp"
#include "autotrain/kernels/attention.hpp"
#include "autotrain/kernels/matmul.hpp"
#include "autotrain/kernels/rmsnorm.hpp"
#include "autotrain/kernels/rope.hpp"
#include "autotrain/kernels/swiglu.hpp"
#include "finite_differences.hpp"
#include "test_support.hpp"

namespace autotrain::kernels::llama_kernels_test {
namespace {

using testing::random_vec;

// ---- RMSNorm ----------------------------------------------------------------------------------

// Per-head norm inside a padded row (Qwen3's q_norm): 4 rows of 3 heads of 4, row stride 17, so
// 5 elements of every row belong to no vector.
constexpr std::size_t kNormRows = 4;
constexpr int kNormHeads = 3, kNormC = 4;
constexpr std::size_t kNormStride = kNormHeads * kNormC + 5;
constexpr double kNormEps = 1e-6;

bool in_a_vector(std::size_t i) {
  return i % kNormStride < static_cast<std::size_t>(kNormHeads) * kNormC;
}

TEST(RmsNorm, ForwardNormalisesEachHeadAndLeavesTheRowPaddingAlone) {
  const Vec inp = random_vec(kNormRows * kNormStride, 101, 3.0), weight = random_vec(kNormC, 102);
  Vec out(inp.size(), 42.0), rstd(kNormRows * kNormHeads);
  rmsnorm_forward(out.data(), rstd.data(), inp.data(), weight.data(), kNormRows, kNormHeads, kNormC,
                  kNormStride, kNormEps);
  for (std::size_t r = 0; r < kNormRows; ++r) {
    for (int h = 0; h < kNormHeads; ++h) {
      const std::size_t first = r * kNormStride + static_cast<std::size_t>(h) * kNormC;
      double mean_square = 0;
      for (int c = 0; c < kNormC; ++c) mean_square += inp[first + c] * inp[first + c] / kNormC;
      const double expected_rstd = 1 / std::sqrt(mean_square + kNormEps);
      EXPECT_NEAR(rstd[r * kNormHeads + h], expected_rstd, 1e-12 * expected_rstd);
      for (int c = 0; c < kNormC; ++c) {
        EXPECT_NEAR(out[first + c], inp[first + c] * expected_rstd * weight[c], 1e-12)
            << "r=" << r << " h=" << h << " c=" << c;
      }
    }
  }
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (!in_a_vector(i)) {
      EXPECT_EQ(out[i], 42.0) << i;
    }
  }
}

TEST(RmsNorm, BackwardMatchesFiniteDifferencesPerHeadWithPaddedStride) {
  Vec inp = random_vec(kNormRows * kNormStride, 103, 2.0), weight = random_vec(kNormC, 104);
  const Vec w = random_vec(inp.size(), 105);
  Vec out(inp.size(), 0.0), rstd(kNormRows * kNormHeads);
  auto objective = [&] {
    rmsnorm_forward(out.data(), rstd.data(), inp.data(), weight.data(), kNormRows, kNormHeads,
                    kNormC, kNormStride, kNormEps);
    return dot(out, w);
  };
  objective();
  Vec dinp(inp.size(), 0.0), dweight(kNormC, 0.0);
  rmsnorm_backward(dinp.data(), dweight.data(), w.data(), inp.data(), weight.data(), rstd.data(),
                   kNormRows, kNormHeads, kNormC, kNormStride);
  expect_matches_finite_differences(inp, dinp, objective, "dinp");
  expect_matches_finite_differences(weight, dweight, objective, "dweight");
}

// Gemma's norms scale by 1 + weight: the same as a norm of weight + 1, and its backward too.
TEST(RmsNorm, AWeightOffsetOfOneIsTheNormOfWeightPlusOne) {
  Vec inp = random_vec(kNormRows * kNormStride, 106, 2.0), weight = random_vec(kNormC, 107);
  Vec plus_one = weight;
  for (double& x : plus_one) x += 1;
  const Vec w = random_vec(inp.size(), 108);
  Vec out(inp.size(), 0.0), rstd(kNormRows * kNormHeads), expected(inp.size(), 0.0);
  rmsnorm_forward(expected.data(), rstd.data(), inp.data(), plus_one.data(), kNormRows, kNormHeads,
                  kNormC, kNormStride, kNormEps);
  auto objective = [&] {
    rmsnorm_forward(out.data(), rstd.data(), inp.data(), weight.data(), kNormRows, kNormHeads,
                    kNormC, kNormStride, kNormEps, 1.0);
    return dot(out, w);
  };
  objective();
  for (std::size_t i = 0; i < out.size(); ++i) EXPECT_NEAR(out[i], expected[i], 1e-14) << i;
  Vec dinp(inp.size(), 0.0), dweight(kNormC, 0.0);
  rmsnorm_backward(dinp.data(), dweight.data(), w.data(), inp.data(), weight.data(), rstd.data(),
                   kNormRows, kNormHeads, kNormC, kNormStride, 1.0);
  expect_matches_finite_differences(inp, dinp, objective, "dinp");
  expect_matches_finite_differences(weight, dweight, objective, "dweight");
}

TEST(RmsNorm, BackwardAddsIntoInputAndParameterGradients) {
  const std::size_t rows = 6;
  const int C = 8;
  const Vec inp = random_vec(rows * C, 106), weight = random_vec(C, 107),
            dout = random_vec(rows * C, 108);
  Vec out(rows * C), rstd(rows);
  rmsnorm_forward(out.data(), rstd.data(), inp.data(), weight.data(), rows, 1, C, C, kNormEps);
  Vec dinp0(rows * C, 0.0), dw0(C, 0.0);
  rmsnorm_backward(dinp0.data(), dw0.data(), dout.data(), inp.data(), weight.data(), rstd.data(),
                   rows, 1, C, C);
  Vec dinp1(rows * C, 1.0), dw1(C, 2.0);
  rmsnorm_backward(dinp1.data(), dw1.data(), dout.data(), inp.data(), weight.data(), rstd.data(),
                   rows, 1, C, C);
  for (std::size_t i = 0; i < dinp0.size(); ++i) EXPECT_NEAR(dinp1[i], dinp0[i] + 1.0, 1e-12);
  for (int c = 0; c < C; ++c) EXPECT_NEAR(dw1[c], dw0[c] + 2.0, 1e-12);
}

TEST(RmsNorm, FloatPathAgreesWithDoubleToSinglePrecision) {
  const std::size_t rows = 7;
  const int C = 40;
  const Vec inp = random_vec(rows * C, 109, 4.0), weight = random_vec(C, 110),
            dout = random_vec(rows * C, 111);
  Vec out(rows * C), rstd(rows), dinp(rows * C, 0.0), dweight(C, 0.0);
  rmsnorm_forward(out.data(), rstd.data(), inp.data(), weight.data(), rows, 1, C, C, kNormEps);
  rmsnorm_backward(dinp.data(), dweight.data(), dout.data(), inp.data(), weight.data(), rstd.data(),
                   rows, 1, C, C);
  std::vector<float> inpf(inp.begin(), inp.end()), weightf(weight.begin(), weight.end()),
      doutf(dout.begin(), dout.end());
  std::vector<float> outf(rows * C), rstdf(rows), dinpf(rows * C, 0.0f), dweightf(C, 0.0f);
  rmsnorm_forward(outf.data(), rstdf.data(), inpf.data(), weightf.data(), rows, 1, C,
                  static_cast<std::size_t>(C), kNormEps);
  rmsnorm_backward(dinpf.data(), dweightf.data(), doutf.data(), inpf.data(), weightf.data(),
                   rstdf.data(), rows, 1, C, static_cast<std::size_t>(C));
  for (std::size_t i = 0; i < out.size(); ++i) {
    EXPECT_NEAR(outf[i], out[i], 1e-5 * std::max(1.0, std::abs(out[i])));
    EXPECT_NEAR(dinpf[i], dinp[i], 1e-5 * std::max(1.0, std::abs(dinp[i])));
  }
  for (int c = 0; c < C; ++c)
    EXPECT_NEAR(dweightf[c], dweight[c], 1e-5 * std::max(1.0, std::abs(dweight[c])));
}

// ---- RoPE -------------------------------------------------------------------------------------

// 2 sequences of 3 rows, 2 heads of 6 in a row of 16 (4 elements of padding), starting at
// position 2 (a continuation after a cached prefix).
constexpr int kRopeB = 2, kRopeT = 3, kRopeHeads = 2, kRopeHS = 6, kRopeHalf = kRopeHS / 2;
constexpr std::size_t kRopeStride = kRopeHeads * kRopeHS + 4;
constexpr int kRopePos0 = 2, kRopePositions = kRopePos0 + kRopeT;

// Hugging Face's default inverse frequencies, base^(-2i / HS).
std::vector<double> default_inv_freq(int HS, double base) {
  std::vector<double> inv_freq(static_cast<std::size_t>(HS / 2));
  for (int i = 0; i < HS / 2; ++i) inv_freq[i] = std::pow(base, -2.0 * i / HS);
  return inv_freq;
}

TEST(Rope, TablesHoldCosineAndSineOfPositionTimesInverseFrequency) {
  const std::vector<double> inv_freq = {1.0, 0.1, 0.37};
  const int positions = 9;
  Vec cos_table(positions * 3), sin_table(positions * 3);
  rope_tables(cos_table.data(), sin_table.data(), inv_freq.data(), positions, 3);
  for (int p = 0; p < positions; ++p) {
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(cos_table[p * 3 + i], std::cos(p * inv_freq[i])) << "p=" << p << " i=" << i;
      EXPECT_EQ(sin_table[p * 3 + i], std::sin(p * inv_freq[i])) << "p=" << p << " i=" << i;
    }
  }
  std::vector<float> cosf(positions * 3), sinf(positions * 3);
  rope_tables(cosf.data(), sinf.data(), inv_freq.data(), positions, 3);
  for (std::size_t i = 0; i < cosf.size(); ++i) {
    EXPECT_EQ(cosf[i], static_cast<float>(cos_table[i]));
    EXPECT_EQ(sinf[i], static_cast<float>(sin_table[i]));
  }
}

TEST(Rope, ForwardMatchesRotateHalfAndLeavesTheRowPaddingAlone) {
  const std::vector<double> inv_freq = default_inv_freq(kRopeHS, 10000.0);
  Vec cos_table(kRopePositions * kRopeHalf), sin_table(kRopePositions * kRopeHalf);
  rope_tables(cos_table.data(), sin_table.data(), inv_freq.data(), kRopePositions, kRopeHalf);
  const Vec x = random_vec(kRopeB * kRopeT * kRopeStride, 201);
  Vec rotated = x;
  rope_forward(rotated.data(), cos_table.data(), sin_table.data(), kRopeB, kRopeT, kRopeHeads,
               kRopeHS, kRopeHS, kRopeStride, kRopePos0);
  for (int b = 0; b < kRopeB; ++b) {
    for (int t = 0; t < kRopeT; ++t) {
      const int p = kRopePos0 + t;
      const std::size_t row = (static_cast<std::size_t>(b) * kRopeT + t) * kRopeStride;
      for (int h = 0; h < kRopeHeads; ++h) {
        const double* head = x.data() + row + h * kRopeHS;
        // q·cos + rotate_half(q)·sin with emb = cat(freqs, freqs), rotate_half = cat(-x2, x1)
        for (int i = 0; i < kRopeHS; ++i) {
          const double angle = p * inv_freq[i % kRopeHalf];
          const double rotated_half = i < kRopeHalf ? -head[i + kRopeHalf] : head[i - kRopeHalf];
          const double expected = head[i] * std::cos(angle) + rotated_half * std::sin(angle);
          EXPECT_NEAR(rotated[row + h * kRopeHS + i], expected, 1e-14)
              << "b=" << b << " t=" << t << " h=" << h << " i=" << i;
        }
      }
      for (std::size_t i = kRopeHeads * kRopeHS; i < kRopeStride; ++i) {
        EXPECT_EQ(rotated[row + i], x[row + i]);
      }
    }
  }
}

TEST(Rope, BackwardMatchesFiniteDifferences) {
  const std::vector<double> inv_freq = default_inv_freq(kRopeHS, 10000.0);
  Vec cos_table(kRopePositions * kRopeHalf), sin_table(kRopePositions * kRopeHalf);
  rope_tables(cos_table.data(), sin_table.data(), inv_freq.data(), kRopePositions, kRopeHalf);
  Vec x = random_vec(kRopeB * kRopeT * kRopeStride, 202);
  const Vec w = random_vec(x.size(), 203);
  Vec rotated(x.size());
  auto objective = [&] {
    rotated = x;
    rope_forward(rotated.data(), cos_table.data(), sin_table.data(), kRopeB, kRopeT, kRopeHeads,
                 kRopeHS, kRopeHS, kRopeStride, kRopePos0);
    return dot(rotated, w);
  };
  Vec dx = w;
  rope_backward(dx.data(), cos_table.data(), sin_table.data(), kRopeB, kRopeT, kRopeHeads, kRopeHS,
                kRopeHS, kRopeStride, kRopePos0);
  expect_matches_finite_differences(x, dx, objective, "dx");
}

// Partial rotary embeddings (Phi's partial_rotary_factor): the first R = 4 of each head's 6
// dimensions rotate as a head of 4 (pairs (i, i + 2)) by scaled tables (longrope's
// attention_factor); the last 2 pass through; backward is the transposed rotation.
TEST(Rope, PartialRotaryTurnsTheFirstDimensionsOnly) {
  constexpr int R = 4, half = R / 2;
  constexpr double scale = 1.25;
  const std::vector<double> inv_freq = default_inv_freq(R, 10000.0);
  Vec cos_table(kRopePositions * half), sin_table(kRopePositions * half);
  rope_tables(cos_table.data(), sin_table.data(), inv_freq.data(), kRopePositions, half, scale);
  EXPECT_EQ(cos_table[half], scale * std::cos(inv_freq[0]));
  const Vec x = random_vec(kRopeB * kRopeT * kRopeStride, 204);
  Vec rotated = x;
  rope_forward(rotated.data(), cos_table.data(), sin_table.data(), kRopeB, kRopeT, kRopeHeads,
               kRopeHS, R, kRopeStride, kRopePos0);
  for (int bt = 0; bt < kRopeB * kRopeT; ++bt) {
    const int p = kRopePos0 + bt % kRopeT;
    for (int h = 0; h < kRopeHeads; ++h) {
      const std::size_t at = std::size_t(bt) * kRopeStride + h * kRopeHS;
      const double* head = x.data() + at;
      for (int i = 0; i < kRopeHS; ++i) {
        double expected = head[i];
        if (i < R) {
          const double angle = p * inv_freq[i % half];
          const double rotated_half = i < half ? -head[i + half] : head[i - half];
          expected = scale * (head[i] * std::cos(angle) + rotated_half * std::sin(angle));
        }
        EXPECT_NEAR(rotated[at + i], expected, 1e-14) << "bt=" << bt << " h=" << h << " i=" << i;
      }
    }
  }
  Vec x2 = random_vec(x.size(), 205);
  const Vec w = random_vec(x.size(), 206);
  auto objective = [&] {
    rotated = x2;
    rope_forward(rotated.data(), cos_table.data(), sin_table.data(), kRopeB, kRopeT, kRopeHeads,
                 kRopeHS, R, kRopeStride, kRopePos0);
    return dot(rotated, w);
  };
  Vec dx = w;
  rope_backward(dx.data(), cos_table.data(), sin_table.data(), kRopeB, kRopeT, kRopeHeads, kRopeHS,
                R, kRopeStride, kRopePos0);
  // With scaled tables the rotation is not orthogonal: backward (the transposed rotation by the
  // same tables) is still its exact gradient.
  expect_matches_finite_differences(x2, dx, objective, "dx");
}

// ---- SwiGLU -----------------------------------------------------------------------------------

constexpr std::size_t kGluN = 5;
constexpr int kGluI = 7;

double silu(double x) {
  return x / (1 + std::exp(-x));
}

TEST(SwiGlu, ForwardIsSiluOfGateTimesUp) {
  const Vec gate_up = random_vec(kGluN * 2 * kGluI, 301, 3.0);
  Vec out(kGluN * kGluI);
  swiglu_forward(out.data(), gate_up.data(), kGluN, kGluI);
  for (std::size_t n = 0; n < kGluN; ++n) {
    for (int i = 0; i < kGluI; ++i) {
      const double gate = gate_up[n * 2 * kGluI + i], up = gate_up[n * 2 * kGluI + kGluI + i];
      EXPECT_NEAR(out[n * kGluI + i], silu(gate) * up, 1e-14) << "n=" << n << " i=" << i;
    }
  }
}

TEST(SwiGlu, BackwardMatchesFiniteDifferencesAndOverwritesTheGradient) {
  Vec gate_up = random_vec(kGluN * 2 * kGluI, 302, 3.0);
  const Vec w = random_vec(kGluN * kGluI, 303);
  Vec out(kGluN * kGluI);
  auto objective = [&] {
    swiglu_forward(out.data(), gate_up.data(), kGluN, kGluI);
    return dot(out, w);
  };
  Vec dgate_up(gate_up.size(), 99.0);  // garbage: must be overwritten
  swiglu_backward(dgate_up.data(), w.data(), gate_up.data(), kGluN, kGluI);
  expect_matches_finite_differences(gate_up, dgate_up, objective, "dgate_up");
}

// GeGLU (Gemma's): gelu with PyTorch's tanh approximation, times up.
TEST(GeGlu, ForwardIsTanhGeluOfGateTimesUpAndBackwardMatchesFiniteDifferences) {
  Vec gate_up = random_vec(kGluN * 2 * kGluI, 306, 3.0);
  const Vec w = random_vec(kGluN * kGluI, 307);
  Vec out(kGluN * kGluI);
  auto objective = [&] {
    gated_forward(GateActivation::gelu_tanh, out.data(), gate_up.data(), kGluN, kGluI);
    return dot(out, w);
  };
  objective();
  for (std::size_t n = 0; n < kGluN; ++n) {
    for (int i = 0; i < kGluI; ++i) {
      const double g = gate_up[n * 2 * kGluI + i], up = gate_up[n * 2 * kGluI + kGluI + i];
      const double gelu =
          0.5 * g * (1 + std::tanh(0.7978845608028654 * (g + 0.044715 * g * g * g)));
      EXPECT_NEAR(out[n * kGluI + i], gelu * up, 1e-14) << "n=" << n << " i=" << i;
    }
  }
  Vec dgate_up(gate_up.size(), 99.0);  // garbage: must be overwritten
  gated_backward(GateActivation::gelu_tanh, dgate_up.data(), w.data(), gate_up.data(), kGluN,
                 kGluI);
  expect_matches_finite_differences(gate_up, dgate_up, objective, "dgate_up");
}

TEST(SwiGlu, FloatPathAgreesWithDoubleAndStaysFiniteForHugeGates) {
  Vec gate_up = random_vec(kGluN * 2 * kGluI, 304, 4.0);
  gate_up[0] = 200.0;   // exp(-gate) underflows
  gate_up[1] = -200.0;  // exp(-gate) overflows float
  const Vec dout = random_vec(kGluN * kGluI, 305);
  Vec out(kGluN * kGluI), dgate_up(gate_up.size());
  swiglu_forward(out.data(), gate_up.data(), kGluN, kGluI);
  swiglu_backward(dgate_up.data(), dout.data(), gate_up.data(), kGluN, kGluI);
  std::vector<float> gate_upf(gate_up.begin(), gate_up.end()), doutf(dout.begin(), dout.end());
  std::vector<float> outf(out.size()), dgate_upf(gate_up.size());
  swiglu_forward(outf.data(), gate_upf.data(), kGluN, kGluI);
  swiglu_backward(dgate_upf.data(), doutf.data(), gate_upf.data(), kGluN, kGluI);
  for (std::size_t i = 0; i < out.size(); ++i) {
    ASSERT_TRUE(std::isfinite(outf[i])) << i;
    EXPECT_NEAR(outf[i], out[i], 1e-5 * std::max(1.0, std::abs(out[i]))) << i;
  }
  for (std::size_t i = 0; i < dgate_up.size(); ++i) {
    ASSERT_TRUE(std::isfinite(dgate_upf[i])) << i;
    EXPECT_NEAR(dgate_upf[i], dgate_up[i], 1e-5 * std::max(1.0, std::abs(dgate_up[i]))) << i;
  }
}

// ---- Grouped-query attention ------------------------------------------------------------------

struct HeadShape {
  int NH, NKV, HS;
  AttentionOptions options = {};  // Gemma's: a score scale, a soft cap, a window
};

std::string head_shape_name(const ::testing::TestParamInfo<HeadShape>& info) {
  return "NH" + std::to_string(info.param.NH) + "_NKV" + std::to_string(info.param.NKV) + "_HS" +
         std::to_string(info.param.HS) + (info.param.options.plain() ? "" : "_options");
}

class GroupedQueryAttention : public ::testing::TestWithParam<HeadShape> {
 protected:
  static constexpr int B = 2, T = 5;
  int NH = GetParam().NH, NKV = GetParam().NKV, HS = GetParam().HS;
  AttentionOptions options = GetParam().options;
  std::size_t row = static_cast<std::size_t>(NH + 2 * NKV) * HS;
  std::size_t out_row = static_cast<std::size_t>(NH) * HS;
  std::size_t qkv_size = B * T * row;
  std::size_t out_size = B * T * out_row;
  std::size_t lse_size = static_cast<std::size_t>(B) * NH * T;
};

// out and lse by the definition, one (b, h, t) at a time: scores q·k · scale (1 / sqrt(HS) by
// default), cap · tanh(score / cap) with a soft cap, keys t - window < t2 <= t with a window.
void naive_attention(Vec& out, Vec& lse, const Vec& qkv, int B, int T, int NH, int NKV, int HS,
                     const AttentionOptions& options) {
  const double scale = options.scale > 0 ? options.scale : 1 / std::sqrt(static_cast<double>(HS));
  const std::size_t row = static_cast<std::size_t>(NH + 2 * NKV) * HS;
  const std::size_t out_row = static_cast<std::size_t>(NH) * HS;
  for (int b = 0; b < B; ++b) {
    for (int h = 0; h < NH; ++h) {
      const int kv = h / (NH / NKV);
      for (int t = 0; t < T; ++t) {
        const double* q = qkv.data() + (static_cast<std::size_t>(b) * T + t) * row + h * HS;
        std::vector<double> p(T, 0.0);
        const int first = options.window > 0 ? std::max(0, t - options.window + 1) : 0;
        double maxv = -1e300;
        for (int t2 = first; t2 <= t; ++t2) {
          const double* k =
              qkv.data() + (static_cast<std::size_t>(b) * T + t2) * row + (NH + kv) * HS;
          double s = 0;
          for (int i = 0; i < HS; ++i) s += q[i] * k[i];
          p[t2] = s * scale;
          if (options.softcap > 0) p[t2] = options.softcap * std::tanh(p[t2] / options.softcap);
          maxv = std::max(maxv, p[t2]);
        }
        double sum = 0;
        for (int t2 = first; t2 <= t; ++t2) {
          p[t2] = std::exp(p[t2] - maxv);
          sum += p[t2];
        }
        for (int t2 = first; t2 <= t; ++t2) p[t2] /= sum;
        lse[(static_cast<std::size_t>(b) * NH + h) * T + t] = maxv + std::log(sum);
        double* o = out.data() + (static_cast<std::size_t>(b) * T + t) * out_row + h * HS;
        for (int i = 0; i < HS; ++i) {
          o[i] = 0;
          for (int t2 = first; t2 <= t; ++t2) {
            const double* v =
                qkv.data() + (static_cast<std::size_t>(b) * T + t2) * row + (NH + NKV + kv) * HS;
            o[i] += p[t2] * v[i];
          }
        }
      }
    }
  }
}

TEST_P(GroupedQueryAttention, ForwardMatchesTheDefinition) {
  const Vec qkv = random_vec(qkv_size, 401);
  Vec out(out_size), lse(lse_size, 5.0), expected_out(out_size), expected_lse(lse_size);
  attention_forward(out.data(), lse.data(), qkv.data(), B, T, NH, NKV, HS, options);
  naive_attention(expected_out, expected_lse, qkv, B, T, NH, NKV, HS, options);
  for (std::size_t i = 0; i < out_size; ++i) EXPECT_NEAR(out[i], expected_out[i], 1e-12) << i;
  for (std::size_t i = 0; i < lse_size; ++i) EXPECT_NEAR(lse[i], expected_lse[i], 1e-12) << i;
}

TEST_P(GroupedQueryAttention, BackwardMatchesFiniteDifferences) {
  Vec qkv = random_vec(qkv_size, 402);
  const Vec w = random_vec(out_size, 403);
  Vec out(out_size), lse(lse_size);
  auto objective = [&] {
    attention_forward(out.data(), lse.data(), qkv.data(), B, T, NH, NKV, HS, options);
    return dot(out, w);
  };
  objective();
  Vec dqkv(qkv_size, 77.0), scratch(lse_size, 9.0);  // garbage: must be overwritten
  attention_backward(dqkv.data(), scratch.data(), w.data(), qkv.data(), lse.data(), B, T, NH, NKV,
                     HS, options);
  expect_matches_finite_differences(qkv, dqkv, objective, "dqkv");
}

TEST_P(GroupedQueryAttention, ForwardLastMatchesTheLastRowOfForward) {
  // One sequence (B = 1) of T rows: the cache up to and including the query's row.
  const Vec qkv = random_vec(T * row, 404);
  Vec out(T * out_row), lse(static_cast<std::size_t>(NH) * T);
  attention_forward(out.data(), lse.data(), qkv.data(), 1, T, NH, NKV, HS, options);
  Vec last(out_row), scratch(T);
  attention_forward_last(last.data(), scratch.data(), qkv.data(), T, NH, NKV, HS, options);
  for (std::size_t i = 0; i < out_row; ++i) {
    EXPECT_NEAR(last[i], out[(T - 1) * out_row + i], 1e-13) << i;
  }
}

INSTANTIATE_TEST_SUITE_P(HeadShapes, GroupedQueryAttention,
                         ::testing::Values(HeadShape{4, 2, 6}, HeadShape{4, 1, 6},
                                           HeadShape{4, 4, 6}, HeadShape{4, 2, 6, {0.3, 1.5, 3}},
                                           HeadShape{4, 1, 6, {0, 0, 2}}),
                         head_shape_name);

// GPT-2's (C, NH) signatures are the NKV = NH, HS = C / NH case, bit for bit (float, the path
// training runs).
TEST(Attention, GptSignaturesAreBitwiseTheGroupedCaseWithNkvEqualToNh) {
  const int B = 2, T = 5, C = 8, NH = 2, HS = C / NH;
  const std::size_t qkv_size = B * T * 3 * C, out_size = B * T * C,
                    lse_size = static_cast<std::size_t>(B) * NH * T;
  const Vec qkv64 = random_vec(qkv_size, 405), dout64 = random_vec(out_size, 406);
  const std::vector<float> qkv(qkv64.begin(), qkv64.end()), dout(dout64.begin(), dout64.end());
  std::vector<float> out_gpt(out_size), lse_gpt(lse_size), out_gqa(out_size), lse_gqa(lse_size);
  attention_forward(out_gpt.data(), lse_gpt.data(), qkv.data(), B, T, C, NH);
  attention_forward(out_gqa.data(), lse_gqa.data(), qkv.data(), B, T, NH, NH, HS);
  EXPECT_EQ(out_gpt, out_gqa);
  EXPECT_EQ(lse_gpt, lse_gqa);
  std::vector<float> dqkv_gpt(qkv_size), dqkv_gqa(qkv_size), scratch(lse_size);
  attention_backward(dqkv_gpt.data(), scratch.data(), dout.data(), qkv.data(), lse_gpt.data(), B, T,
                     C, NH);
  attention_backward(dqkv_gqa.data(), scratch.data(), dout.data(), qkv.data(), lse_gqa.data(), B, T,
                     NH, NH, HS);
  EXPECT_EQ(dqkv_gpt, dqkv_gqa);
  std::vector<float> last_gpt(C), last_gqa(C), last_scratch(T);
  attention_forward_last(last_gpt.data(), last_scratch.data(), qkv.data(), T, C, NH);
  attention_forward_last(last_gqa.data(), last_scratch.data(), qkv.data(), T, NH, NH, HS);
  EXPECT_EQ(last_gpt, last_gqa);
}

// The tiled kernels against the whole-matrix reference (attention_reference.hpp) at lengths that
// cross their 64-row tiles: windows inside a tile, across tiles, of one key and past T; a soft
// cap; GQA groups of 1, 2 and 4. Double: the two differ only in the order of their sums.
TEST(Attention, TiledKernelsMatchTheWholeMatrixReferenceAcrossTiles) {
  struct Case {
    int T, NH, NKV, HS;
    AttentionOptions options;
  };
  const Case cases[] = {{150, 4, 2, 8, {}},
                        {130, 4, 1, 8, {0.3, 1.5, 0}},
                        {200, 2, 2, 16, {0, 0, 20}},
                        {150, 4, 4, 8, {0.25, 2.0, 70}},
                        {129, 4, 2, 8, {0, 0, 1}},
                        {64, 2, 1, 8, {0, 0, 300}},
                        {1, 2, 1, 8, {}}};
  for (const Case& c : cases) {
    const int B = 2;
    const std::size_t row = static_cast<std::size_t>(c.NH + 2 * c.NKV) * c.HS;
    const std::size_t qkv_size = B * c.T * row, out_size = B * c.T * std::size_t(c.NH) * c.HS;
    const std::size_t scores = static_cast<std::size_t>(B) * c.NH * c.T * c.T;
    const std::string what = "T " + std::to_string(c.T) + " NH " + std::to_string(c.NH) + " NKV " +
                             std::to_string(c.NKV) + " window " + std::to_string(c.options.window) +
                             " cap " + std::to_string(c.options.softcap);
    const Vec qkv = random_vec(qkv_size, 407, 2.0), dout = random_vec(out_size, 408);
    Vec out(out_size), lse(static_cast<std::size_t>(B) * c.NH * c.T), dqkv(qkv_size, 7.0),
        scratch(lse.size());
    attention_forward(out.data(), lse.data(), qkv.data(), B, c.T, c.NH, c.NKV, c.HS, c.options);
    attention_backward(dqkv.data(), scratch.data(), dout.data(), qkv.data(), lse.data(), B, c.T,
                       c.NH, c.NKV, c.HS, c.options);
    Vec ref_out(out_size), att(scores), ref_dqkv(qkv_size), ref_scratch(2 * scores);
    reference::attention_forward(ref_out.data(), att.data(), qkv.data(), B, c.T, c.NH, c.NKV, c.HS,
                                 c.options);
    reference::attention_backward(ref_dqkv.data(), ref_scratch.data(), dout.data(), qkv.data(),
                                  att.data(), B, c.T, c.NH, c.NKV, c.HS, c.options);
    for (std::size_t i = 0; i < out_size; ++i)
      ASSERT_NEAR(out[i], ref_out[i], 1e-12) << what << " out " << i;
    for (std::size_t i = 0; i < qkv_size; ++i)
      ASSERT_NEAR(dqkv[i], ref_dqkv[i], 1e-11) << what << " dqkv " << i;
  }
}

// In float, as training runs, within float rounding of the reference.
TEST(Attention, TiledFloatKernelsMatchTheReferenceWithinRounding) {
  const int B = 2, T = 300, NH = 4, NKV = 2, HS = 32;
  const AttentionOptions options{0, 30.0, 100};
  const std::size_t row = static_cast<std::size_t>(NH + 2 * NKV) * HS;
  const std::size_t qkv_size = B * T * row, out_size = B * T * std::size_t(NH) * HS;
  const Vec qkv64 = random_vec(qkv_size, 409, 1.5), dout64 = random_vec(out_size, 410);
  const std::vector<float> qkv(qkv64.begin(), qkv64.end()), dout(dout64.begin(), dout64.end());
  std::vector<float> out(out_size), lse(std::size_t(B) * NH * T), dqkv(qkv_size),
      scratch(lse.size());
  attention_forward(out.data(), lse.data(), qkv.data(), B, T, NH, NKV, HS, options);
  attention_backward(dqkv.data(), scratch.data(), dout.data(), qkv.data(), lse.data(), B, T, NH,
                     NKV, HS, options);
  const std::size_t scores = static_cast<std::size_t>(B) * NH * T * T;
  Vec ref_out(out_size), att(scores), ref_dqkv(qkv_size), ref_scratch(2 * scores);
  reference::attention_forward(ref_out.data(), att.data(), qkv64.data(), B, T, NH, NKV, HS,
                               options);
  reference::attention_backward(ref_dqkv.data(), ref_scratch.data(), dout64.data(), qkv64.data(),
                                att.data(), B, T, NH, NKV, HS, options);
  for (std::size_t i = 0; i < out_size; ++i)
    ASSERT_NEAR(out[i], ref_out[i], 2e-5 * std::max(1.0, std::abs(ref_out[i]))) << "out " << i;
  for (std::size_t i = 0; i < qkv_size; ++i)
    ASSERT_NEAR(dqkv[i], ref_dqkv[i], 5e-5 * std::max(1.0, std::abs(ref_dqkv[i]))) << "dqkv " << i;
}

// ---- Linear (torch.nn.Linear layout) ----------------------------------------------------------

constexpr std::size_t kLinearN = 6;
constexpr int kLinearIC = 5, kLinearOC = 7;

TEST(Linear, ForwardIsInputTimesWeightTransposedPlusBias) {
  const Vec inp = random_vec(kLinearN * kLinearIC, 501),
            weight = random_vec(kLinearOC * kLinearIC, 502), bias = random_vec(kLinearOC, 503);
  Vec with_bias(kLinearN * kLinearOC, 8.0), without_bias(kLinearN * kLinearOC, 8.0);
  linear_forward(with_bias.data(), inp.data(), weight.data(), bias.data(), kLinearN, kLinearIC,
                 kLinearOC);
  linear_forward(without_bias.data(), inp.data(), weight.data(),
                 static_cast<const double*>(nullptr), kLinearN, kLinearIC, kLinearOC);
  for (std::size_t n = 0; n < kLinearN; ++n) {
    for (int o = 0; o < kLinearOC; ++o) {
      double sum = 0;
      for (int i = 0; i < kLinearIC; ++i) sum += inp[n * kLinearIC + i] * weight[o * kLinearIC + i];
      EXPECT_NEAR(without_bias[n * kLinearOC + o], sum, 1e-13) << "n=" << n << " o=" << o;
      EXPECT_NEAR(with_bias[n * kLinearOC + o], sum + bias[o], 1e-13) << "n=" << n << " o=" << o;
    }
  }
}

TEST(Linear, BackwardMatchesFiniteDifferencesAndOverwritesInputGradient) {
  Vec inp = random_vec(kLinearN * kLinearIC, 504), weight = random_vec(kLinearOC * kLinearIC, 505),
      bias = random_vec(kLinearOC, 506);
  const Vec w = random_vec(kLinearN * kLinearOC, 507);
  Vec out(kLinearN * kLinearOC);
  auto objective = [&] {
    linear_forward(out.data(), inp.data(), weight.data(), bias.data(), kLinearN, kLinearIC,
                   kLinearOC);
    return dot(out, w);
  };
  Vec dinp(inp.size(), 123.0);  // garbage: must be overwritten
  Vec dweight(weight.size(), 0.0), dbias(kLinearOC, 0.0);
  linear_backward(dinp.data(), dweight.data(), dbias.data(), w.data(), inp.data(), weight.data(),
                  kLinearN, kLinearIC, kLinearOC);
  expect_matches_finite_differences(inp, dinp, objective, "dinp");
  expect_matches_finite_differences(weight, dweight, objective, "dweight");
  expect_matches_finite_differences(bias, dbias, objective, "dbias");
}

TEST(Linear, BackwardWithoutBiasOrInputGradientAccumulatesTheWeightGradient) {
  const Vec inp = random_vec(kLinearN * kLinearIC, 508),
            weight = random_vec(kLinearOC * kLinearIC, 509),
            dout = random_vec(kLinearN * kLinearOC, 510);
  Vec dinp(inp.size()), dweight(weight.size(), 0.0), dbias(kLinearOC, 0.0);
  linear_backward(dinp.data(), dweight.data(), dbias.data(), dout.data(), inp.data(), weight.data(),
                  kLinearN, kLinearIC, kLinearOC);
  Vec dweight_only(weight.size(), 1.5);
  linear_backward(static_cast<double*>(nullptr), dweight_only.data(), static_cast<double*>(nullptr),
                  dout.data(), inp.data(), weight.data(), kLinearN, kLinearIC, kLinearOC);
  for (std::size_t i = 0; i < dweight.size(); ++i) {
    EXPECT_NEAR(dweight_only[i], dweight[i] + 1.5, 1e-13) << i;
  }
}

}  // namespace
}  // namespace autotrain::kernels::llama_kernels_test
