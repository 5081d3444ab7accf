// The fused AdamW kernel (optim/adamw_kernel.hpp) against the formula in double, and its 16-bit
// copies against a reference round-to-nearest-even written from the formats' definitions.
#include "autotrain/optim/adamw_kernel.hpp"

#include <gtest/gtest.h>
#include <omp.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace autotrain::adamw_kernel_test {
namespace {

// Sizes around the vector widths (8, 16) and past the kernel's parallel threshold (2^15), odd
// ones leaving tails.
constexpr std::size_t kSizes[] = {1, 7, 15, 16, 17, 33, 1000, 100003};

struct State {
  std::vector<float> p, m, v;
};

// The kernel's formula for one element in double (the header's, torch.optim.AdamW's).
struct ReferenceAdamW {
  double p, m = 0, v = 0;
  void step(double g, const AdamWStepArgs& a) {
    const double grad = g * a.grad_scale;
    const auto t = static_cast<double>(a.step);
    m = a.beta1 * m + (1.0 - a.beta1) * grad;
    v = a.beta2 * v + (1.0 - a.beta2) * grad * grad;
    const double denom = std::sqrt(v / (1.0 - std::pow(double{a.beta2}, t))) + a.eps;
    p = p * (1.0 - double{a.lr} * a.weight_decay) -
        a.lr * (m / (1.0 - std::pow(double{a.beta1}, t))) / denom;
  }
};

std::vector<float> random_floats(std::size_t n, float low, float high, unsigned seed) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<float> uniform(low, high);
  std::vector<float> values(n);
  for (auto& value : values) value = uniform(generator);
  return values;
}

AdamWStepArgs step_args(long long step) {
  AdamWStepArgs args;
  args.lr = 1e-2f;
  args.weight_decay = 0.1f;
  args.grad_scale = 0.5f;
  args.step = step;
  return args;
}

// Within a few float roundings per step of the double reference, relative to the value's size.
void expect_close(float actual, double expected, const char* what, std::size_t i) {
  EXPECT_NEAR(actual, expected, 2e-6 * std::max(1.0, std::fabs(expected))) << what << " " << i;
}

TEST(AdamWKernel, MatchesTheFormulaInDoubleOverSeveralStepsAtEverySize) {
  for (std::size_t n : kSizes) {
    State s{random_floats(n, -1, 1, 1), std::vector<float>(n), std::vector<float>(n)};
    std::vector<ReferenceAdamW> reference(s.p.begin(), s.p.end());
    for (long long step = 1; step <= 5; ++step) {
      const std::vector<float> g = random_floats(n, -2, 2, static_cast<unsigned>(step + 10 * n));
      adamw_update(s.p.data(), g.data(), s.m.data(), s.v.data(), n, step_args(step));
      for (std::size_t i = 0; i < n; ++i) reference[i].step(g[i], step_args(step));
    }
    for (std::size_t i = 0; i < n; ++i) {
      expect_close(s.p[i], reference[i].p, "p", i);
      expect_close(s.m[i], reference[i].m, "m", i);
      expect_close(s.v[i], reference[i].v, "v", i);
    }
  }
}

TEST(AdamWKernel, ZeroElementsTouchesNothing) {
  adamw_update(nullptr, nullptr, nullptr, nullptr, 0, step_args(1));
  adamw_update_bf16(nullptr, nullptr, nullptr, nullptr, nullptr, 0, step_args(1));
  adamw_update_fp16(nullptr, nullptr, nullptr, nullptr, nullptr, 0, step_args(1));
  float p = 1, g = 1, m = 2, v = 3;
  std::uint16_t copy = 7;
  adamw_update_bf16(&p, &g, &m, &v, &copy, 0, step_args(1));
  EXPECT_EQ(p, 1.0f);
  EXPECT_EQ(m, 2.0f);
  EXPECT_EQ(v, 3.0f);
  EXPECT_EQ(copy, 7);
}

// Runs `steps` steps of one overload ("none", "bf16", "fp16") from fixed inputs.
State run_steps(const char* overload, std::size_t n, int steps, std::vector<std::uint16_t>& copy) {
  State s{random_floats(n, -1, 1, 3), random_floats(n, -0.1f, 0.1f, 4),
          random_floats(n, 0, 0.01f, 5)};
  copy.assign(n, 0);
  for (int step = 1; step <= steps; ++step) {
    const std::vector<float> g = random_floats(n, -2, 2, static_cast<unsigned>(step));
    const std::string_view kind = overload;
    if (kind == "none")
      adamw_update(s.p.data(), g.data(), s.m.data(), s.v.data(), n, step_args(step));
    if (kind == "bf16")
      adamw_update_bf16(s.p.data(), g.data(), s.m.data(), s.v.data(), copy.data(), n,
                        step_args(step));
    if (kind == "fp16")
      adamw_update_fp16(s.p.data(), g.data(), s.m.data(), s.v.data(), copy.data(), n,
                        step_args(step));
  }
  return s;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(AdamWKernel, CopyOverloadsUpdateTheFp32StateBitForBitAsThePlainOne) {
  for (std::size_t n : kSizes) {
    std::vector<std::uint16_t> copy;
    const State plain = run_steps("none", n, 3, copy);
    for (const char* overload : {"bf16", "fp16"}) {
      const State with_copy = run_steps(overload, n, 3, copy);
      EXPECT_TRUE(same_bits(plain.p, with_copy.p)) << overload << " n=" << n;
      EXPECT_TRUE(same_bits(plain.m, with_copy.m)) << overload << " n=" << n;
      EXPECT_TRUE(same_bits(plain.v, with_copy.v)) << overload << " n=" << n;
    }
  }
}

// Every element rounds alike in a vector, in a tail and on any thread, so the result cannot depend
// on the thread count or on where a range (a rank's shard) begins.
TEST(AdamWKernel, ResultDoesNotDependOnThreadsOrWhereTheRangeBegins) {
  constexpr std::size_t n = 100003;
  const std::vector<float> g = random_floats(n, -2, 2, 7);
  // Weights smaller than the update, so that a rounding of the update shows in them.
  const State start{random_floats(n, -1e-3f, 1e-3f, 8), random_floats(n, -0.1f, 0.1f, 9),
                    random_floats(n, 0, 0.01f, 10)};
  const int threads_before = omp_get_max_threads();
  std::vector<State> results;
  for (int threads : {1, 2, 3}) {
    omp_set_num_threads(threads);
    State s = start;
    adamw_update(s.p.data(), g.data(), s.m.data(), s.v.data(), n, step_args(2));
    results.push_back(s);
  }
  omp_set_num_threads(threads_before);
  // [0, 13) and [13, n): the first range is all tail, the second starts off the vector grid.
  constexpr std::size_t kSplit = 13;
  State split = start;
  adamw_update(split.p.data(), g.data(), split.m.data(), split.v.data(), kSplit, step_args(2));
  adamw_update(split.p.data() + kSplit, g.data() + kSplit, split.m.data() + kSplit,
               split.v.data() + kSplit, n - kSplit, step_args(2));
  results.push_back(split);
  for (std::size_t r = 1; r < results.size(); ++r) {
    EXPECT_TRUE(same_bits(results[0].p, results[r].p)) << r;
    EXPECT_TRUE(same_bits(results[0].m, results[r].m)) << r;
    EXPECT_TRUE(same_bits(results[0].v, results[r].v)) << r;
  }
}

// Round to nearest even of `value` into a binary format with `mantissa_bits` stored mantissa bits
// and exponent `bias` (bf16: 7, 127; fp16: 10, 15), from the definition: the nearest multiple of
// the spacing of value's binade (of the smallest normal binade for subnormals), ties to the even
// multiple; at 2^(emax + 1) or past it, infinity. Not for NaNs.
std::uint16_t reference_round(float value, int mantissa_bits, int bias) {
  const int exponent_bits = 15 - mantissa_bits;
  const int min_exponent = 1 - bias;
  const int max_exponent = (1 << exponent_bits) - 2 - bias;
  const auto sign = static_cast<std::uint16_t>(std::signbit(value) ? 0x8000 : 0);
  const double magnitude = std::fabs(double{value});
  const int binade = magnitude == 0 ? min_exponent : std::max(std::ilogb(magnitude), min_exponent);
  const double spacing = std::ldexp(1.0, binade - mantissa_bits);
  const double rounded = std::nearbyint(magnitude / spacing) * spacing;  // ties to even
  if (std::isinf(value) || rounded >= std::ldexp(1.0, max_exponent + 1))
    return static_cast<std::uint16_t>(sign | (((1 << exponent_bits) - 1) << mantissa_bits));
  if (rounded < std::ldexp(1.0, min_exponent))  // subnormal or zero
    return static_cast<std::uint16_t>(
        sign | static_cast<int>(rounded / std::ldexp(1.0, min_exponent - mantissa_bits)));
  const int exponent = std::ilogb(rounded);
  const int fraction =
      static_cast<int>(rounded / std::ldexp(1.0, exponent - mantissa_bits)) - (1 << mantissa_bits);
  return static_cast<std::uint16_t>(sign | ((exponent + bias) << mantissa_bits) | fraction);
}

std::uint16_t reference_bf16(float value) {
  return reference_round(value, 7, 127);
}
std::uint16_t reference_fp16(float value) {
  return reference_round(value, 10, 15);
}

TEST(AdamWKernel, ReferenceRoundingAgreesWithKnownValues) {
  EXPECT_EQ(reference_bf16(1.0f), 0x3f80);
  EXPECT_EQ(reference_bf16(std::bit_cast<float>(0x3f808000u)), 0x3f80);  // tie, down to even
  EXPECT_EQ(reference_bf16(std::bit_cast<float>(0x3f818000u)), 0x3f82);  // tie, up to even
  EXPECT_EQ(reference_bf16(std::numeric_limits<float>::max()), 0x7f80);
  EXPECT_EQ(reference_bf16(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(reference_fp16(1.0f), 0x3c00);
  EXPECT_EQ(reference_fp16(-2.5f), 0xc100);
  EXPECT_EQ(reference_fp16(65504.0f), 0x7bff);
  EXPECT_EQ(reference_fp16(65519.99f), 0x7bff);
  EXPECT_EQ(reference_fp16(65520.0f), 0x7c00);    // the tie past the largest: infinity
  EXPECT_EQ(reference_fp16(0x1p-24f), 0x0001);    // smallest subnormal
  EXPECT_EQ(reference_fp16(0x1p-25f), 0x0000);    // tie, to even zero
  EXPECT_EQ(reference_fp16(0x1.8p-24f), 0x0002);  // tie, to even 2
  EXPECT_EQ(reference_fp16(-0.0f), 0x8000);
}

// Weights whose update leaves them as they are (lr 0, zero gradients and moments): the copy is
// then the rounding of chosen bit patterns. Random patterns over every float (NaNs, subnormals),
// then ties, near ties and the formats' edges. Not infinities: the formula's lr * (... + decay * p)
// is NaN for an infinite p even at lr 0; finite weights past each format's range test overflow.
std::vector<float> weights_to_round() {
  std::vector<float> weights;
  std::mt19937 generator(11);
  for (int i = 0; i < 100003; ++i)
    weights.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(generator())));
  for (std::uint32_t high : {0x3f80u, 0x3f81u, 0x0001u, 0x7f7fu, 0xbf80u, 0x8000u}) {
    for (std::uint32_t low : {0x0000u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu})
      weights.push_back(std::bit_cast<float>(high << 16 | low));
  }
  for (float value : {65504.0f, 65519.99f, 65520.0f, -65520.0f, 65536.0f, 1e10f, 0x1p-24f, 0x1p-25f,
                      0x1.8p-24f, 0x1.000002p-25f, 0x1.0008p0f, 0x1.0018p0f, -0.0f,
                      -std::numeric_limits<float>::max(), std::numeric_limits<float>::max()})
    weights.push_back(value);
  return weights;
}

void expect_copy_is_rounding(const std::vector<float>& p, const std::vector<std::uint16_t>& copy,
                             bool bf16) {
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(p[i]);
    const auto sign = static_cast<std::uint16_t>(bits >> 16 & 0x8000);
    bool right = false;
    if (!std::isnan(p[i])) {
      right = copy[i] == (bf16 ? reference_bf16(p[i]) : reference_fp16(p[i]));
    } else if (bf16) {
      right = copy[i] == (bits >> 16 | 0x40);  // the high half, quieted
    } else {
      right = (copy[i] & 0xfe00) == (sign | 0x7e00);  // a quiet NaN of the same sign
    }
    if (!right && ++wrong <= 5)
      ADD_FAILURE() << std::hex << "weight bits 0x" << bits << " copy 0x" << copy[i];
  }
  EXPECT_EQ(wrong, 0u);
}

TEST(AdamWKernel, SixteenBitCopiesAreRoundToNearestEvenOfTheUpdatedWeight) {
  for (bool bf16 : {true, false}) {
    std::vector<float> p = weights_to_round();
    const std::size_t n = p.size();
    std::vector<float> g(n), m(n), v(n);
    std::vector<std::uint16_t> copy(n);
    AdamWStepArgs args;  // lr 0: every weight stays as it is (NaNs keep being NaNs)
    if (bf16) adamw_update_bf16(p.data(), g.data(), m.data(), v.data(), copy.data(), n, args);
    if (!bf16) adamw_update_fp16(p.data(), g.data(), m.data(), v.data(), copy.data(), n, args);
    const std::vector<float> expected = weights_to_round();
    for (std::size_t i = 0; i < n; ++i) {
      if (std::isnan(expected[i])) continue;
      ASSERT_EQ(std::bit_cast<std::uint32_t>(p[i]), std::bit_cast<std::uint32_t>(expected[i])) << i;
    }
    expect_copy_is_rounding(p, copy, bf16);
  }
}

TEST(AdamWKernel, SixteenBitCopiesFollowTheWeightsOverRealSteps) {
  for (std::size_t n : kSizes) {
    std::vector<std::uint16_t> copy;
    State s = run_steps("bf16", n, 3, copy);
    expect_copy_is_rounding(s.p, copy, true);
    s = run_steps("fp16", n, 3, copy);
    expect_copy_is_rounding(s.p, copy, false);
  }
}

}  // namespace
}  // namespace autotrain::adamw_kernel_test
