// Every kernel's backward against central finite differences in double precision, plus the
// properties the model relies on (overwrite vs accumulate, causality, padding). Shapes are tiny:
// B = 2, T = 5, C = 8, NH = 2 unless a test says otherwise.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "autotrain/core/error.hpp"
#include "autotrain/kernels/attention.hpp"
#include "autotrain/kernels/crossentropy.hpp"
#include "autotrain/kernels/encoder.hpp"
#include "autotrain/kernels/fast_math.hpp"
#include "autotrain/kernels/gelu.hpp"
#include "autotrain/kernels/layernorm.hpp"
#include "autotrain/kernels/matmul.hpp"
#include "autotrain/kernels/residual.hpp"
#include "autotrain/kernels/threads.hpp"
#include "finite_differences.hpp"
#include "test_support.hpp"

namespace autotrain::kernels::kernels_test {
namespace {

using testing::random_vec;

constexpr int B = 2, T = 5, C = 8, NH = 2;
constexpr std::size_t N = static_cast<std::size_t>(B) * T;

TEST(Encoder, BackwardMatchesFiniteDifferencesWithRepeatedTokens) {
  const int V = 6;
  const std::vector<std::int32_t> inp = {1, 3, 3, 0, 5, 3, 2, 1, 1, 4};  // repeats collide in dwte
  Vec wte = random_vec(V * C, 1), wpe = random_vec(T * C, 2), w = random_vec(N * C, 3);
  Vec out(N * C);
  auto objective = [&] {
    encoder_forward(out.data(), inp.data(), wte.data(), wpe.data(), B, T, C);
    return dot(out, w);
  };
  Vec dwte(V * C, 0.0), dwpe(T * C, 0.0);
  encoder_backward(dwte.data(), dwpe.data(), w.data(), inp.data(), B, T, C);
  expect_matches_finite_differences(wte, dwte, objective, "dwte");
  expect_matches_finite_differences(wpe, dwpe, objective, "dwpe");
}

TEST(LayerNorm, BackwardMatchesFiniteDifferences) {
  Vec inp = random_vec(N * C, 4, 2.0), weight = random_vec(C, 5), bias = random_vec(C, 6);
  const Vec w = random_vec(N * C, 7);
  Vec out(N * C), mean(N), rstd(N);
  auto objective = [&] {
    layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), weight.data(), bias.data(),
                      N, C);
    return dot(out, w);
  };
  objective();
  Vec dinp(N * C, 0.0), dweight(C, 0.0), dbias(C, 0.0);
  layernorm_backward(dinp.data(), dweight.data(), dbias.data(), w.data(), inp.data(), weight.data(),
                     mean.data(), rstd.data(), N, C);
  expect_matches_finite_differences(inp, dinp, objective, "dinp");
  expect_matches_finite_differences(weight, dweight, objective, "dweight");
  expect_matches_finite_differences(bias, dbias, objective, "dbias");
}

TEST(LayerNorm, BackwardAddsIntoInputAndParameterGradients) {
  const Vec inp = random_vec(N * C, 8), weight = random_vec(C, 9), bias = random_vec(C, 10);
  const Vec dout = random_vec(N * C, 11);
  Vec out(N * C), mean(N), rstd(N);
  layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), weight.data(), bias.data(), N,
                    C);
  Vec dinp0(N * C, 0.0), dw0(C, 0.0), db0(C, 0.0);
  layernorm_backward(dinp0.data(), dw0.data(), db0.data(), dout.data(), inp.data(), weight.data(),
                     mean.data(), rstd.data(), N, C);
  Vec dinp1(N * C, 1.0), dw1(C, 2.0), db1(C, 3.0);
  layernorm_backward(dinp1.data(), dw1.data(), db1.data(), dout.data(), inp.data(), weight.data(),
                     mean.data(), rstd.data(), N, C);
  for (std::size_t i = 0; i < dinp0.size(); ++i) EXPECT_NEAR(dinp1[i], dinp0[i] + 1.0, 1e-12);
  for (int c = 0; c < C; ++c) {
    EXPECT_NEAR(dw1[c], dw0[c] + 2.0, 1e-12);
    EXPECT_NEAR(db1[c], db0[c] + 3.0, 1e-12);
  }
}

TEST(LayerNorm, ForwardNormalisesEachRowToZeroMeanUnitVariance) {
  const Vec inp = random_vec(N * C, 12, 5.0);
  const Vec ones(C, 1.0), zeros(C, 0.0);
  Vec out(N * C), mean(N), rstd(N);
  layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), ones.data(), zeros.data(), N,
                    C);
  for (std::size_t n = 0; n < N; ++n) {
    double m = 0, v = 0;
    for (int c = 0; c < C; ++c) m += out[n * C + c] / C;
    for (int c = 0; c < C; ++c) v += (out[n * C + c] - m) * (out[n * C + c] - m) / C;
    EXPECT_NEAR(m, 0.0, 1e-12);
    EXPECT_NEAR(v, 1.0, 1e-3);  // eps = 1e-5 in the denominator
  }
}

TEST(Matmul, BackwardMatchesFiniteDifferencesAndOverwritesInputGradient) {
  const int IC = 6, OC = 10;
  Vec inp = random_vec(N * IC, 13), weight = random_vec(IC * OC, 14), bias = random_vec(OC, 15);
  const Vec w = random_vec(N * OC, 16);
  Vec out(N * OC);
  auto objective = [&] {
    matmul_forward(out.data(), inp.data(), weight.data(), bias.data(), N, IC, OC);
    return dot(out, w);
  };
  Vec dinp(N * IC, 123.0);  // garbage: must be overwritten
  Vec dweight(IC * OC, 0.0), dbias(OC, 0.0);
  matmul_backward(dinp.data(), dweight.data(), dbias.data(), w.data(), inp.data(), weight.data(), N,
                  IC, OC);
  expect_matches_finite_differences(inp, dinp, objective, "dinp");
  expect_matches_finite_differences(weight, dweight, objective, "dweight");
  expect_matches_finite_differences(bias, dbias, objective, "dbias");
}

TEST(Matmul, BackwardAccumulatesParameterGradients) {
  const int IC = 4, OC = 3;
  const Vec inp = random_vec(N * IC, 17), weight = random_vec(IC * OC, 18);
  const Vec dout = random_vec(N * OC, 19);
  Vec dinp(N * IC), dw(IC * OC, 0.0), db(OC, 0.0);
  matmul_backward(dinp.data(), dw.data(), db.data(), dout.data(), inp.data(), weight.data(), N, IC,
                  OC);
  Vec dw2 = dw, db2 = db;
  matmul_backward(dinp.data(), dw2.data(), db2.data(), dout.data(), inp.data(), weight.data(), N,
                  IC, OC);
  for (std::size_t i = 0; i < dw.size(); ++i) EXPECT_NEAR(dw2[i], 2 * dw[i], 1e-12);
  for (std::size_t i = 0; i < db.size(); ++i) EXPECT_NEAR(db2[i], 2 * db[i], 1e-12);
}

// The float gemm takes a matrix-vector path for a single row or column (generation); every
// transpose pair, padded leading dimensions, alpha and beta must give the general product.
TEST(Matmul, FloatGemmWithOneRowOrOneColumnMatchesTheDefinition) {
  struct Shape {
    std::size_t M, N, K;
  };
  for (const Shape shape : {Shape{1, 7, 5}, Shape{6, 1, 5}, Shape{1, 1, 9}, Shape{3, 4, 2}}) {
    for (const Transpose ta : {Transpose::no, Transpose::yes}) {
      for (const Transpose tb : {Transpose::no, Transpose::yes}) {
        const std::size_t rows = shape.M, cols = shape.N, inner = shape.K;
        // Stored shapes: a [rows, inner] or [inner, rows], b [inner, cols] or [cols, inner]; each
        // row padded by 3.
        const std::size_t a_rows = ta == Transpose::no ? rows : inner,
                          a_cols = ta == Transpose::no ? inner : rows;
        const std::size_t b_rows = tb == Transpose::no ? inner : cols,
                          b_cols = tb == Transpose::no ? cols : inner;
        const std::size_t lda = a_cols + 3, ldb = b_cols + 3, ldc = cols + 3;
        const Vec a64 = random_vec(a_rows * lda, 61), b64 = random_vec(b_rows * ldb, 62);
        const Vec c64 = random_vec(rows * ldc, 63);
        std::vector<float> a(a64.begin(), a64.end()), b(b64.begin(), b64.end());
        std::vector<float> c(c64.begin(), c64.end());
        gemm<float>(ta, tb, rows, cols, inner, 0.5f, a.data(), lda, b.data(), ldb, 2.0f, c.data(),
                    ldc);
        for (std::size_t i = 0; i < rows; ++i) {
          for (std::size_t j = 0; j < cols; ++j) {
            double sum = 0;
            for (std::size_t k = 0; k < inner; ++k) {
              const double x = ta == Transpose::no ? a[i * lda + k] : a[k * lda + i];
              const double y = tb == Transpose::no ? b[k * ldb + j] : b[j * ldb + k];
              sum += x * y;
            }
            const double expected = 0.5 * sum + 2.0 * static_cast<float>(c64[i * ldc + j]);
            ASSERT_NEAR(c[i * ldc + j], expected, 1e-5)
                << "M " << rows << " N " << cols << " K " << inner << " ta "
                << int(ta == Transpose::yes) << " tb " << int(tb == Transpose::yes) << " at (" << i
                << ", " << j << ")";
          }
        }
      }
    }
  }
}

TEST(Attention, BackwardMatchesFiniteDifferences) {
  Vec qkv = random_vec(N * 3 * C, 20);
  const Vec w = random_vec(N * C, 21);
  Vec out(N * C), lse(static_cast<std::size_t>(B) * NH * T);
  auto objective = [&] {
    attention_forward(out.data(), lse.data(), qkv.data(), B, T, C, NH);
    return dot(out, w);
  };
  objective();
  Vec dqkv(N * 3 * C, 77.0), scratch(static_cast<std::size_t>(B) * NH * T);
  attention_backward(dqkv.data(), scratch.data(), w.data(), qkv.data(), lse.data(), B, T, C, NH);
  expect_matches_finite_differences(qkv, dqkv, objective, "dqkv");
}

TEST(Attention, OutputAtPositionIgnoresLaterPositions) {
  Vec qkv = random_vec(N * 3 * C, 22);
  Vec out(N * C), lse(static_cast<std::size_t>(B) * NH * T);
  attention_forward(out.data(), lse.data(), qkv.data(), B, T, C, NH);
  const Vec before = out;
  // Change q, k and v of the last position of every sequence.
  for (int b = 0; b < B; ++b) {
    for (int i = 0; i < 3 * C; ++i) qkv[(static_cast<std::size_t>(b) * T + T - 1) * 3 * C + i] += 5;
  }
  attention_forward(out.data(), lse.data(), qkv.data(), B, T, C, NH);
  for (int b = 0; b < B; ++b) {
    for (int t = 0; t < T - 1; ++t) {
      for (int c = 0; c < C; ++c) {
        const std::size_t i = (static_cast<std::size_t>(b) * T + t) * C + c;
        EXPECT_EQ(out[i], before[i]) << "b=" << b << " t=" << t;
      }
    }
  }
}

TEST(Attention, HugeScoresGiveFiniteOutputsAndGradients) {
  Vec qkv = random_vec(N * 3 * C, 23, 300.0);  // scores ~1e5: exp overflows without max-subtraction
  std::vector<float> qkvf(qkv.begin(), qkv.end()), dout(N * C, 1.0f);
  std::vector<float> out(N * C), lse(static_cast<std::size_t>(B) * NH * T), dqkv(N * 3 * C),
      scratch(lse.size());
  attention_forward(out.data(), lse.data(), qkvf.data(), B, T, C, NH);
  attention_backward(dqkv.data(), scratch.data(), dout.data(), qkvf.data(), lse.data(), B, T, C,
                     NH);
  for (float x : out) EXPECT_TRUE(std::isfinite(x));
  for (float x : lse) EXPECT_TRUE(std::isfinite(x));
  for (float x : dqkv) EXPECT_TRUE(std::isfinite(x));
  // Each output is a convex combination of the values it sees (probabilities summing to 1).
  for (int b = 0; b < B; ++b) {
    for (int t = 0; t < T; ++t) {
      for (int c = 0; c < C; ++c) {
        float lo = 1e30f, hi = -1e30f;
        for (int t2 = 0; t2 <= t; ++t2) {
          const float v = qkvf[(static_cast<std::size_t>(b) * T + t2) * 3 * C + 2 * C + c];
          lo = std::min(lo, v);
          hi = std::max(hi, v);
        }
        const float o = out[(static_cast<std::size_t>(b) * T + t) * C + c];
        EXPECT_GE(o, lo - 1e-3f * std::abs(lo));
        EXPECT_LE(o, hi + 1e-3f * std::abs(hi));
      }
    }
  }
}

TEST(Gelu, BackwardMatchesFiniteDifferencesAndForwardMatchesFormula) {
  Vec inp = random_vec(64, 24, 3.0);
  const Vec w = random_vec(64, 25);
  Vec out(64);
  auto objective = [&] {
    gelu_forward(out.data(), inp.data(), inp.size());
    return dot(out, w);
  };
  objective();
  for (std::size_t i = 0; i < inp.size(); ++i) {
    const double x = inp[i];
    const double expected =
        0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    EXPECT_NEAR(out[i], expected, 1e-14);
  }
  Vec dinp(64);
  gelu_backward(dinp.data(), inp.data(), w.data(), inp.size());
  expect_matches_finite_differences(inp, dinp, objective, "dinp");
}

TEST(Gelu, FloatPathAgreesWithDoubleToSinglePrecision) {
  const Vec inp = random_vec(1000, 26, 4.0), dout = random_vec(1000, 27);
  Vec out(1000), dinp(1000);
  gelu_forward(out.data(), inp.data(), inp.size());
  gelu_backward(dinp.data(), inp.data(), dout.data(), inp.size());
  std::vector<float> inpf(inp.begin(), inp.end()), doutf(dout.begin(), dout.end());
  std::vector<float> outf(1000), dinpf(1000);
  gelu_forward(outf.data(), inpf.data(), inpf.size());
  gelu_backward(dinpf.data(), inpf.data(), doutf.data(), inpf.size());
  for (std::size_t i = 0; i < inp.size(); ++i) {
    // float inputs and tanh via exp: ~1e-7 error in tanh, amplified by up to ~5 in gelu'(x)
    EXPECT_NEAR(outf[i], out[i], 2e-6 * std::max(1.0, std::abs(out[i])));
    EXPECT_NEAR(dinpf[i], dinp[i], 1e-5 * std::max(1.0, std::abs(dinp[i])));
  }
}

TEST(Residual, ForwardAdds) {
  const Vec a = random_vec(N, 28), b = random_vec(N, 29);
  Vec out(N);
  residual_forward(out.data(), a.data(), b.data(), N);
  for (std::size_t i = 0; i < N; ++i) EXPECT_EQ(out[i], a[i] + b[i]);
}

constexpr int V = 11, Vp = 16;

std::vector<std::int32_t> some_targets() {
  return {0, 10, 3, 3, 7, 1, 9, 2, 5, 4};
}

TEST(CrossEntropy, BackwardMatchesFiniteDifferences) {
  Vec logits = random_vec(N * Vp, 31, 2.0);
  const auto targets = some_targets();
  Vec losses(N), lse(N);
  const double dloss = 0.37;
  auto objective = [&] {
    crossentropy_forward(losses.data(), lse.data(), logits.data(), targets.data(), N, V, Vp);
    double sum = 0;
    for (double l : losses) sum += dloss * l;
    return sum;
  };
  objective();
  Vec dlogits(N * Vp, 55.0);
  crossentropy_backward(dlogits.data(), logits.data(), lse.data(), targets.data(), dloss, N, V, Vp);
  expect_matches_finite_differences(logits, dlogits, objective, "dlogits");
}

TEST(CrossEntropy, PaddedColumnsNeverChangeLossAndGetZeroGradient) {
  Vec logits = random_vec(N * Vp, 32);
  const auto targets = some_targets();
  Vec losses(N), lse(N);
  crossentropy_forward(losses.data(), lse.data(), logits.data(), targets.data(), N, V, Vp);
  const Vec before = losses;
  for (std::size_t n = 0; n < N; ++n) {
    for (int v = V; v < Vp; ++v) logits[n * Vp + v] = 1e6;  // would dominate any softmax
  }
  crossentropy_forward(losses.data(), lse.data(), logits.data(), targets.data(), N, V, Vp);
  EXPECT_EQ(losses, before);
  Vec dlogits(N * Vp, 9.0);
  crossentropy_backward(dlogits.data(), logits.data(), lse.data(), targets.data(), 1.0, N, V, Vp);
  for (std::size_t n = 0; n < N; ++n) {
    double row = 0;
    for (int v = 0; v < V; ++v) row += dlogits[n * Vp + v];
    EXPECT_NEAR(row, 0.0, 1e-12);  // softmax minus one-hot sums to zero
    for (int v = V; v < Vp; ++v) EXPECT_EQ(dlogits[n * Vp + v], 0.0);
  }
}

TEST(CrossEntropy, IgnoredTargetsCarryNoLossAndNoGradient) {
  const Vec logits = random_vec(N * Vp, 34, 2.0);
  auto targets = some_targets();
  Vec losses(N), lse(N), dlogits(N * Vp, 7.0);
  crossentropy_forward(losses.data(), lse.data(), logits.data(), targets.data(), N, V, Vp);
  const Vec full = losses;
  targets[2] = targets[7] = kIgnoreTarget;
  crossentropy_forward(losses.data(), lse.data(), logits.data(), targets.data(), N, V, Vp);
  crossentropy_backward(dlogits.data(), logits.data(), lse.data(), targets.data(), 0.5, N, V, Vp);
  for (std::size_t n = 0; n < N; ++n) {
    const bool ignored = n == 2 || n == 7;
    EXPECT_EQ(losses[n], ignored ? 0.0 : full[n]) << n;
    double row = 0;
    for (int v = 0; v < Vp; ++v) {
      row += std::abs(dlogits[n * Vp + v]);
    }
    if (ignored) {
      EXPECT_EQ(row, 0.0) << n;
    } else {
      EXPECT_GT(row, 0.0) << n;
    }
  }
}

TEST(CrossEntropy, FloatBackwardInPlaceMatchesDouble) {
  const Vec logits = random_vec(N * Vp, 33, 30.0);  // large logits: stability matters
  const auto targets = some_targets();
  Vec losses(N), lse(N), dlogits(N * Vp);
  crossentropy_forward(losses.data(), lse.data(), logits.data(), targets.data(), N, V, Vp);
  crossentropy_backward(dlogits.data(), logits.data(), lse.data(), targets.data(), 0.5, N, V, Vp);
  std::vector<float> lf(logits.begin(), logits.end()), lossf(N), lsef(N);
  crossentropy_forward(lossf.data(), lsef.data(), lf.data(), targets.data(), N, V, Vp);
  crossentropy_backward(lf.data(), lf.data(), lsef.data(), targets.data(), 0.5f, N, V, Vp);
  for (std::size_t n = 0; n < N; ++n) {
    EXPECT_NEAR(lossf[n], losses[n], 1e-4 * std::max(1.0, losses[n]));
  }
  for (std::size_t i = 0; i < lf.size(); ++i) EXPECT_NEAR(lf[i], dlogits[i], 1e-5);
}

TEST(FastMath, ExpIsWithinTwoUlpsOfStdExpOverTheSoftmaxRange) {
  for (float x = -87.0f; x <= 88.0f; x += 0.0137f) {
    const double exact = std::exp(static_cast<double>(x));
    EXPECT_NEAR(exp_fast(x), exact, 2.5e-7 * exact) << "x=" << x;
  }
}

TEST(Threads, RejectsZeroThreads) {
  EXPECT_THROW(set_num_threads(0), Error);
}

}  // namespace
}  // namespace autotrain::kernels::kernels_test
