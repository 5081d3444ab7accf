// auto_find_batch_size's choice (train::find_batch_size) with an injected memory plan: the
// largest divisor of the per-rank sequences that fits, the accumulation that keeps the global
// batch, and the error when nothing fits.
#include "autotrain/train/batch_size_finder.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "autotrain/core/error.hpp"

namespace autotrain::train::batch_size_finder_test {
namespace {

// 100 bytes of state and 10 bytes per sequence.
double linear_plan(int64_t b) {
  return 100.0 + 10.0 * static_cast<double>(b);
}

TEST(BatchSizeFinder, TakesEverySequenceInOneMicroStepWhenTheyFit) {
  const BatchFit fit = find_batch_size(16, 1000, linear_plan, "the budget");
  EXPECT_EQ(fit.batch_size, 16);
  EXPECT_EQ(fit.gradient_accumulation, 1);
  EXPECT_DOUBLE_EQ(fit.needed_bytes, 260);
}

TEST(BatchSizeFinder, PicksTheLargestDivisorThatFits) {
  // 12 sequences: divisors 12, 6, 4, 3, 2, 1; 175 bytes fit 7 sequences, so 6 (not 7, which
  // does not divide 12).
  const BatchFit fit = find_batch_size(12, 175, linear_plan, "the budget");
  EXPECT_EQ(fit.batch_size, 6);
  EXPECT_EQ(fit.gradient_accumulation, 2);
  EXPECT_EQ(fit.batch_size * fit.gradient_accumulation, 12);
}

TEST(BatchSizeFinder, AsksOnlyForDivisorsFromTheLargestDown) {
  std::vector<int64_t> asked;
  const auto plan = [&asked](int64_t b) {
    asked.push_back(b);
    return linear_plan(b);
  };
  const BatchFit fit = find_batch_size(10, 125, plan, "the budget");
  EXPECT_EQ(fit.batch_size, 2);
  EXPECT_EQ(fit.gradient_accumulation, 5);
  EXPECT_EQ(asked, (std::vector<int64_t>{10, 5, 2}));
}

TEST(BatchSizeFinder, APrimeCountFallsToOneSequencePerMicroStep) {
  const BatchFit fit = find_batch_size(7, 150, linear_plan, "the budget");
  EXPECT_EQ(fit.batch_size, 1);
  EXPECT_EQ(fit.gradient_accumulation, 7);
}

TEST(BatchSizeFinder, RefusesWhenEvenOneSequenceDoesNotFitNamingTheNeedAndTheBudget) {
  try {
    find_batch_size(8, 105, linear_plan, "90% of 116 B on GPU 0");
    FAIL() << "expected an error";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("auto_find_batch_size: even batch_size 1 needs 110 B per rank"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("more than 90% of 116 B on GPU 0"), std::string::npos) << message;
    EXPECT_NE(message.find("raise zero_stage or use more ranks"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace autotrain::train::batch_size_finder_test
