// The float gemm (oneDNN's matmul for general shapes) against a double-precision definition for
// every transpose pair, padded leading dimensions, alpha and beta; the bf16 products against the
// same definition over bf16-rounded inputs and against fp32; the precision switch.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "autotrain/core/dtype.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/kernels/matmul.hpp"
#include "test_support.hpp"

namespace autotrain::kernels::gemm_test {
namespace {

struct Shape {
  std::size_t M, N, K;
};

// One product's operands as stored: a [M, K] or [K, M], b [K, N] or [N, K], each row padded
// by 3; c [M, N] padded by 2.
struct Problem {
  Transpose ta, tb;
  Shape shape;
  std::size_t lda, ldb, ldc;
  std::vector<float> a, b, c;

  Problem(Transpose ta_, Transpose tb_, Shape s, std::uint32_t seed) : ta(ta_), tb(tb_), shape(s) {
    const bool a_t = ta == Transpose::yes, b_t = tb == Transpose::yes;
    lda = (a_t ? s.M : s.K) + 3;
    ldb = (b_t ? s.K : s.N) + 3;
    ldc = s.N + 2;
    a = to_float(testing::random_vec((a_t ? s.K : s.M) * lda, seed));
    b = to_float(testing::random_vec((b_t ? s.N : s.K) * ldb, seed + 1));
    c = to_float(testing::random_vec(s.M * ldc, seed + 2));
  }

  static std::vector<float> to_float(const std::vector<double>& x) { return {x.begin(), x.end()}; }

  float a_at(std::size_t i, std::size_t k) const {
    return ta == Transpose::no ? a[i * lda + k] : a[k * lda + i];
  }
  float b_at(std::size_t k, std::size_t j) const {
    return tb == Transpose::no ? b[k * ldb + j] : b[j * ldb + k];
  }

  // alpha · op(a) · op(b) + beta · c in double, with the inputs rounded to bf16 or not.
  std::vector<double> reference(float alpha, float beta, bool bf16) const {
    const auto round = [bf16](float x) {
      return static_cast<double>(bf16 ? bf16_to_float(float_to_bf16(x)) : x);
    };
    std::vector<double> out(c.begin(), c.end());
    for (std::size_t i = 0; i < shape.M; ++i) {
      for (std::size_t j = 0; j < shape.N; ++j) {
        double sum = 0;
        for (std::size_t k = 0; k < shape.K; ++k) sum += round(a_at(i, k)) * round(b_at(k, j));
        out[i * ldc + j] = alpha * sum + (beta == 0.0f ? 0.0 : beta * c[i * ldc + j]);
      }
    }
    return out;
  }

  std::vector<float> run(float alpha, float beta) const {
    std::vector<float> out = c;
    gemm<float>(ta, tb, shape.M, shape.N, shape.K, alpha, a.data(), lda, b.data(), ldb, beta,
                out.data(), ldc);
    return out;
  }

  std::string name() const {
    return cat(shape.M, "×", shape.N, "×", shape.K, ta == Transpose::yes ? " a^T" : "",
               tb == Transpose::yes ? " b^T" : "");
  }
};

// Shapes of the model's products (rows B·T, channels, a vocabulary that is not a multiple of
// anything) and odd ones; none is a single row or column (those are matrix-vector products).
const std::vector<Shape> kShapes = {{2, 3, 4}, {17, 33, 65}, {64, 96, 32}, {40, 131, 24}};
const Transpose kBoth[] = {Transpose::no, Transpose::yes};

struct Scaling {
  float alpha, beta;
};
const Scaling kScalings[] = {{1.0f, 0.0f}, {1.0f, 1.0f}, {0.5f, 2.0f}};

// Entries stay well inside these bounds: inputs in [-1, 1], K ≤ 65, so |c| ≲ 2 · 65.
void expect_near(const std::vector<float>& got, const std::vector<double>& want,
                 const Problem& problem, double tolerance, const std::string& what) {
  for (std::size_t i = 0; i < problem.shape.M; ++i) {
    for (std::size_t j = 0; j < problem.shape.N; ++j) {
      const std::size_t at = i * problem.ldc + j;
      ASSERT_NEAR(got[at], want[at], tolerance)
          << what << " " << problem.name() << " at (" << i << ", " << j << ")";
    }
    // The padding between rows is never written.
    for (std::size_t j = problem.shape.N; j < problem.ldc && i + 1 < problem.shape.M; ++j) {
      ASSERT_EQ(got[i * problem.ldc + j], problem.c[i * problem.ldc + j]) << problem.name();
    }
  }
}

TEST(Gemm, FloatMatchesTheDefinitionForEveryTransposeAlphaAndBeta) {
  std::uint32_t seed = 10;
  for (const Shape shape : kShapes) {
    for (const Transpose ta : kBoth) {
      for (const Transpose tb : kBoth) {
        const Problem problem(ta, tb, shape, seed += 3);
        for (const Scaling s : kScalings) {
          expect_near(problem.run(s.alpha, s.beta), problem.reference(s.alpha, s.beta, false),
                      problem, 1e-4, cat("fp32 alpha ", s.alpha, " beta ", s.beta));
        }
      }
    }
  }
}

TEST(Gemm, NoInnerDimensionScalesCByBeta) {
  std::vector<float> c = {1, 2, 3, 4, 5, 6};
  gemm<float>(Transpose::no, Transpose::no, 2, 3, 0, 1.0f, nullptr, 1, nullptr, 3, 0.5f, c.data(),
              3);
  EXPECT_EQ(c, (std::vector<float>{0.5f, 1, 1.5f, 2, 2.5f, 3}));
  gemm<float>(Transpose::no, Transpose::no, 2, 3, 0, 1.0f, nullptr, 1, nullptr, 3, 0.0f, c.data(),
              3);
  EXPECT_EQ(c, std::vector<float>(6, 0.0f));
}

TEST(Gemm, Bf16RoundsTheInputsAndAccumulatesInFp32) {
  if (!cpu_has_native_bf16()) {
    GTEST_SKIP() << "this CPU has no native bf16 (oneDNN found " << cpu_gemm_isa() << ")";
  }
  std::uint32_t seed = 100;
  for (const Shape shape : kShapes) {
    for (const Transpose ta : kBoth) {
      for (const Transpose tb : kBoth) {
        const Problem problem(ta, tb, shape, seed += 3);
        for (const Scaling s : kScalings) {
          const std::vector<float> fp32 = problem.run(s.alpha, s.beta);
          std::vector<float> bf16;
          {
            const ScopedGemmPrecision precision(GemmPrecision::bf16);
            bf16 = problem.run(s.alpha, s.beta);
          }
          const std::string what = cat("bf16 alpha ", s.alpha, " beta ", s.beta);
          // Exact products of the rounded inputs, summed in fp32.
          expect_near(bf16, problem.reference(s.alpha, s.beta, true), problem, 1e-4, what);
          // Against fp32: each input is off by up to 2^-9 relative, so a sum of K products of
          // entries in [-1, 1] by up to K · 2^-8 · alpha.
          expect_near(bf16, problem.reference(s.alpha, s.beta, false), problem,
                      s.alpha * static_cast<double>(shape.K) / 256.0 + 1e-4, what + " vs fp32");
          if (shape.K > 4) {
            EXPECT_NE(bf16, fp32) << what << " " << problem.name();
          }
        }
      }
    }
  }
  EXPECT_EQ(gemm_precision(), GemmPrecision::fp32);
}

// A product with one inner element and b = 1 gives the rounded a: the vectorised rounding (32
// values at a time, then a scalar tail) must be float_to_bf16's, ties to even included, but for
// fp32 subnormals, which the conversion instruction reads as zero.
TEST(Gemm, Bf16RoundingOfEveryKindOfValueIsFloatToBf16s) {
  if (!cpu_has_native_bf16())
    GTEST_SKIP() << "no native bf16 (oneDNN found " << cpu_gemm_isa() << ")";
  std::vector<float> a = {
      1.0f + 0x1p-8f, 1.0f + 0x3p-8f, -(1.0f + 0x1p-8f), 1.0f + 0x1.01p-8f, 0x1p-130f,
      -0x1p-140f,     3.4e38f,        -INFINITY,         INFINITY,          0.0f,
      -0.0f,          1.0f / 3.0f};
  for (int i = 0; a.size() < 70; ++i) a.push_back(std::ldexp(std::sin(float(i)), i % 40 - 20));
  const std::size_t M = a.size(), N = 3;
  const std::vector<float> ones(N, 1.0f);
  std::vector<float> c(M * N);
  const ScopedGemmPrecision precision(GemmPrecision::bf16);
  gemm<float>(Transpose::no, Transpose::no, M, N, 1, 1.0f, a.data(), 1, ones.data(), N, 0.0f,
              c.data(), N);
  for (std::size_t i = 0; i < M; ++i) {
    const bool subnormal = a[i] != 0.0f && std::fabs(a[i]) < 0x1p-126f;
    const float want = subnormal ? std::copysign(0.0f, a[i]) : bf16_to_float(float_to_bf16(a[i]));
    for (std::size_t j = 0; j < N; ++j) {
      ASSERT_EQ(c[i * N + j], want) << "a[" << i << "] = " << a[i];  // exact; ±0 alike
    }
  }
}

// Products that read inside a shared operand (at an offset, transposed, nested) give exactly
// what rounding each operand on each call gives; the copy is made when the share starts.
TEST(Gemm, ASharedBf16OperandGivesTheProductsOfRoundingEachCall) {
  if (!cpu_has_native_bf16())
    GTEST_SKIP() << "no native bf16 (oneDNN found " << cpu_gemm_isa() << ")";
  const ScopedGemmPrecision precision(GemmPrecision::bf16);
  for (const Transpose ta : kBoth) {
    for (const Transpose tb : kBoth) {
      const Problem problem(ta, tb, {17, 33, 65}, 7);
      const std::vector<float> alone = problem.run(1.0f, 0.5f);
      std::vector<float> region(problem.a.size() + 40, 9.0f);  // a inside it, 24 floats in
      std::copy(problem.a.begin(), problem.a.end(), region.begin() + 24);
      std::vector<float> shared = problem.c, nested = problem.c;
      {
        const SharedBf16Operand outer(region.data(), region.size());
        const auto M = problem.shape.M, N = problem.shape.N, K = problem.shape.K;
        gemm<float>(ta, tb, M, N, K, 1.0f, region.data() + 24, problem.lda, problem.b.data(),
                    problem.ldb, 0.5f, shared.data(), problem.ldc);
        {
          const SharedBf16Operand inner(problem.b.data(), problem.b.size());
          region[24] += 1.0f;  // not seen: the products read the copy made above
          gemm<float>(ta, tb, M, N, K, 1.0f, region.data() + 24, problem.lda, problem.b.data(),
                      problem.ldb, 0.5f, nested.data(), problem.ldc);
        }
      }
      EXPECT_EQ(shared, alone) << problem.name();
      EXPECT_EQ(nested, alone) << problem.name();
    }
  }
}

TEST(Gemm, Bf16IsRefusedWithoutNativeSupportAndNamesTheIsa) {
  if (cpu_has_native_bf16()) {
    const ScopedGemmPrecision precision(GemmPrecision::bf16);
    EXPECT_EQ(gemm_precision(), GemmPrecision::bf16);
    return;
  }
  try {
    set_gemm_precision(GemmPrecision::bf16);
    FAIL() << "bf16 products were accepted on " << cpu_gemm_isa();
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("AVX512-BF16 or AMX-BF16; oneDNN found " + cpu_gemm_isa()),
              std::string::npos)
        << message;
  }
  EXPECT_EQ(gemm_precision(), GemmPrecision::fp32);
}

// Run with ONEDNN_MAX_CPU_ISA=AVX512_CORE (tests/CMakeLists.txt): a CPU without bf16 is
// simulated, whatever this one has.
TEST(Gemm, TheIsaCapOfOneDnnTurnsNativeBf16Off) {
  const char* cap = std::getenv("ONEDNN_MAX_CPU_ISA");
  if (cap == nullptr || std::string(cap) != "AVX512_CORE") {
    GTEST_SKIP() << "runs under ONEDNN_MAX_CPU_ISA=AVX512_CORE (ctest kernels.gemm.no_native_bf16)";
  }
  EXPECT_FALSE(cpu_has_native_bf16()) << cpu_gemm_isa();
  EXPECT_EQ(cpu_gemm_isa().find("BF16"), std::string::npos) << cpu_gemm_isa();
}

}  // namespace
}  // namespace autotrain::kernels::gemm_test
