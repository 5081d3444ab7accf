// fp16's dynamic loss scaling: skip and halve on overflow, double after a run of good steps,
// and nothing at all when disabled (bf16, fp32).
#include "autotrain/train/loss_scaler.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "autotrain/core/error.hpp"

namespace autotrain::train::loss_scaler_test {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(LossScaler, DisabledScalesByOneAndNeverSkips) {
  LossScaler scaler(false);
  EXPECT_EQ(scaler.scale(), 1.0f);
  EXPECT_TRUE(scaler.update(kInf));
  EXPECT_TRUE(scaler.update(std::nan("")));
  EXPECT_EQ(scaler.scale(), 1.0f);
  EXPECT_EQ(scaler.skipped_steps(), 0);
}

TEST(LossScaler, OverflowSkipsTheStepAndHalvesTheScale) {
  LossScaler scaler(true, 1024.0f, 3);
  EXPECT_FALSE(scaler.update(kInf));
  EXPECT_EQ(scaler.scale(), 512.0f);
  EXPECT_FALSE(scaler.update(std::nan("")));
  EXPECT_EQ(scaler.scale(), 256.0f);
  EXPECT_EQ(scaler.skipped_steps(), 2);
  EXPECT_TRUE(scaler.update(3.5));
  EXPECT_EQ(scaler.skipped_steps(), 2);
}

TEST(LossScaler, DoublesAfterGrowthIntervalGoodStepsAndAnOverflowRestartsTheCount) {
  LossScaler scaler(true, 8.0f, 3);
  EXPECT_TRUE(scaler.update(1.0));
  EXPECT_TRUE(scaler.update(1.0));
  EXPECT_EQ(scaler.scale(), 8.0f);
  EXPECT_TRUE(scaler.update(1.0));
  EXPECT_EQ(scaler.scale(), 16.0f);
  EXPECT_TRUE(scaler.update(1.0));
  EXPECT_TRUE(scaler.update(1.0));
  EXPECT_FALSE(scaler.update(kInf));  // two good steps, then an overflow: no growth
  EXPECT_EQ(scaler.scale(), 8.0f);
  EXPECT_TRUE(scaler.update(1.0));
  EXPECT_TRUE(scaler.update(1.0));
  EXPECT_EQ(scaler.scale(), 8.0f);
  EXPECT_TRUE(scaler.update(1.0));
  EXPECT_EQ(scaler.scale(), 16.0f);
}

TEST(LossScaler, TheScaleStaysWithinOneAndTwoToTheTwentyFour) {
  LossScaler low(true, 2.0f, 1);
  for (int i = 0; i < 5; ++i) low.update(kInf);
  EXPECT_EQ(low.scale(), 1.0f);
  LossScaler high(true, 8388608.0f, 1);
  for (int i = 0; i < 5; ++i) high.update(1.0);
  EXPECT_EQ(high.scale(), 16777216.0f);
}

TEST(LossScaler, RestoringASavedStateContinuesWithItsScaleAndCounts) {
  LossScaler first(true, 1024.0f, 3);
  first.update(kInf);
  first.update(1.0);
  first.update(1.0);
  const LossScalerState saved = first.state();
  EXPECT_TRUE(saved.enabled);
  EXPECT_EQ(saved.scale, 512.0f);
  EXPECT_EQ(saved.good_steps, 2);
  EXPECT_EQ(saved.skipped_steps, 1);

  LossScaler resumed(true, 1024.0f, 3);
  resumed.restore(saved);
  EXPECT_EQ(resumed.scale(), 512.0f);
  EXPECT_EQ(resumed.skipped_steps(), 1);
  EXPECT_TRUE(resumed.update(1.0));  // the third good step in a row, as in the first run
  EXPECT_EQ(resumed.scale(), 1024.0f);
}

TEST(LossScaler, AStateWithoutScalingLeavesAnFp16ScalerAtItsInitialScale) {
  LossScaler bf16(false);
  LossScaler fp16(true, 1024.0f);
  fp16.restore(bf16.state());
  EXPECT_EQ(fp16.scale(), 1024.0f);
  LossScaler scaled(true, 64.0f);
  bf16.restore(scaled.state());
  EXPECT_EQ(bf16.scale(), 1.0f);
}

TEST(LossScaler, RejectsAScaleBelowOneOrAnEmptyInterval) {
  EXPECT_THROW(LossScaler(true, 0.5f), Error);
  EXPECT_THROW(LossScaler(true, 2.0f, 0), Error);
}

}  // namespace
}  // namespace autotrain::train::loss_scaler_test
