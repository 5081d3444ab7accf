#include "autotrain/data/sampler.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>

#include "autotrain/core/error.hpp"
#include "autotrain/data/shard.hpp"
#include "test_support.hpp"

namespace autotrain::data::sampler_test {
namespace {

SamplerOptions options(uint64_t batch, uint64_t accumulation, uint64_t world, uint64_t rank) {
  return {.block_size = 8,
          .batch_size = batch,
          .gradient_accumulation = accumulation,
          .world_size = world,
          .rank = rank,
          .seed = 1234};
}

// The multiset of windows step `step` uses, gathered from every rank and micro-step.
std::multiset<uint64_t> step_windows(uint64_t tokens, uint64_t batch, uint64_t accumulation,
                                     uint64_t world, uint64_t step) {
  std::multiset<uint64_t> windows;
  for (uint64_t rank = 0; rank < world; ++rank) {
    Sampler sampler(tokens, options(batch, accumulation, world, rank));
    for (uint64_t s = 0; s < step; ++s) sampler.advance();
    for (uint64_t m = 0; m < accumulation; ++m)
      for (uint64_t b = 0; b < batch; ++b) windows.insert(sampler.window(m, b));
  }
  return windows;
}

TEST(Sampler, EveryStepSeesTheSameWindowsOnOneTwoAndFourRanks) {
  const uint64_t tokens = 8 * 200 + 1;          // 200 windows, G = 16: 12 steps per epoch
  for (uint64_t step = 0; step < 30; ++step) {  // crosses two epoch boundaries
    const auto one = step_windows(tokens, 2, 8, 1, step);
    EXPECT_EQ(one.size(), 16u);
    EXPECT_EQ(std::set<uint64_t>(one.begin(), one.end()).size(), 16u) << "repeats in a step";
    EXPECT_EQ(step_windows(tokens, 2, 4, 2, step), one) << "step " << step;
    EXPECT_EQ(step_windows(tokens, 2, 2, 4, step), one) << "step " << step;
  }
}

TEST(Sampler, MicroStepOfAllRanksIsAContiguousSliceOfTheGlobalBatch) {
  // p = (m * W + r) * B + b: rank 1 of 2, micro-step 1, row 0 is position (1*2+1)*3 = 9.
  Sampler sampler(8 * 100 + 1, options(3, 2, 2, 1));
  EXPECT_EQ(sampler.window(1, 0), sampler.global_batch()[9]);
  EXPECT_EQ(sampler.window(0, 2), sampler.global_batch()[5]);
}

TEST(Sampler, OrderDependsOnlyOnSeedAndEpoch) {
  std::vector<uint32_t> first, second, other_epoch, other_seed;
  epoch_permutation(7, 3, 1000, first);
  epoch_permutation(7, 3, 1000, second);
  epoch_permutation(7, 4, 1000, other_epoch);
  epoch_permutation(8, 3, 1000, other_seed);
  EXPECT_EQ(first, second);
  EXPECT_NE(first, other_epoch);
  EXPECT_NE(first, other_seed);
  std::vector<uint32_t> sorted = first;
  std::sort(sorted.begin(), sorted.end());
  for (uint32_t i = 0; i < sorted.size(); ++i) ASSERT_EQ(sorted[i], i) << "not a permutation";
}

TEST(Sampler, FirstPermutationIsPinnedAcrossBuilds) {
  // Guards the exact PRNG and shuffle: a change here silently changes every run's data order.
  std::vector<uint32_t> order;
  epoch_permutation(42, 0, 10, order);
  EXPECT_EQ(order, (std::vector<uint32_t>{9, 4, 2, 8, 1, 3, 0, 6, 5, 7}));
}

TEST(Sampler, EpochVisitsEachWindowOnceAndDropsTheRemainder) {
  Sampler sampler(8 * 50 + 1, options(4, 1, 3, 0));  // 50 windows, G = 12: 4 steps, 2 dropped
  EXPECT_EQ(sampler.steps_per_epoch(), 4u);
  std::set<uint64_t> seen;
  for (int step = 0; step < 4; ++step) {
    for (const uint64_t window : sampler.global_batch()) EXPECT_TRUE(seen.insert(window).second);
    sampler.advance();
  }
  EXPECT_EQ(seen.size(), 48u);
  EXPECT_EQ(sampler.position(), (SamplerPosition{1, 0}));
}

TEST(Sampler, ResumingFromTheMiddleContinuesIdentically) {
  Sampler reference(8 * 100 + 1, options(2, 3, 2, 1));
  for (int step = 0; step < 11; ++step) reference.advance();
  const SamplerPosition saved = reference.position();
  Sampler resumed(8 * 100 + 1, options(2, 3, 2, 1));
  resumed.restore(saved);
  for (int step = 0; step < 20; ++step) {
    ASSERT_EQ(resumed.global_batch(), reference.global_batch()) << "step " << step;
    ASSERT_EQ(resumed.window(2, 1), reference.window(2, 1));
    reference.advance();
    resumed.advance();
  }
}

TEST(Sampler, RestoringOnAnotherWorldSizeKeepsTheGlobalOrder) {
  Sampler two_ranks(8 * 100 + 1, options(2, 2, 2, 0));
  for (int step = 0; step < 5; ++step) two_ranks.advance();
  Sampler one_rank(8 * 100 + 1, options(2, 4, 1, 0));
  one_rank.restore(two_ranks.position());
  EXPECT_EQ(one_rank.global_batch(), two_ranks.global_batch());
}

TEST(Sampler, DatasetSmallerThanOneGlobalBatchSaysWhatToChange) {
  try {
    Sampler sampler(8 * 10 + 1, options(4, 2, 2, 0));  // 10 windows, G = 16
    FAIL() << "expected an error";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("10 windows"), std::string::npos) << message;
    EXPECT_NE(message.find("needs 16 windows"), std::string::npos) << message;
    EXPECT_NE(message.find("smaller batch_size"), std::string::npos) << message;
  }
}

TEST(Sampler, LoadsInputsAndTargetsShiftedByOneAcrossShards) {
  testing::TempDir dir;
  std::vector<uint16_t> first(13), second(20);
  std::iota(first.begin(), first.end(), 0);
  std::iota(second.begin(), second.end(), 13);
  write_shard(dir / "train_000000.bin", first);
  write_shard(dir / "train_000001.bin", second);
  const TokenDataset dataset = TokenDataset::open(dir.path(), "train");
  ASSERT_EQ(dataset.num_tokens(), 33u);
  std::vector<int32_t> inputs(8), targets(8);
  load_window(dataset, 8, 1, inputs, targets);  // tokens 8..16, crossing the shard boundary
  EXPECT_EQ(inputs, (std::vector<int32_t>{8, 9, 10, 11, 12, 13, 14, 15}));
  EXPECT_EQ(targets, (std::vector<int32_t>{9, 10, 11, 12, 13, 14, 15, 16}));

  Sampler sampler(dataset.num_tokens(), options(2, 1, 1, 0));  // 4 windows
  std::vector<int32_t> batch_inputs(16), batch_targets(16);
  sampler.load_micro_batch(dataset, 0, batch_inputs, batch_targets);
  EXPECT_EQ(batch_inputs[8], static_cast<int32_t>(sampler.window(0, 1) * 8));
  EXPECT_EQ(batch_targets[15], static_cast<int32_t>(sampler.window(0, 1) * 8 + 8));
}

}  // namespace
}  // namespace autotrain::data::sampler_test
