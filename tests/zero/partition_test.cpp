// Partitioning of the flat buffer: optimizer segments and reduction buckets.
#include "autotrain/zero/partition.hpp"

#include <gtest/gtest.h>

#include "autotrain/core/error.hpp"

namespace autotrain::zero::partition_test {
namespace {

model::ModelConfig tiny() {
  return model::ModelConfig::gpt2(3, 2, 32, 16, 256);
}

TEST(OwnedSegments, CoverTheTensorsOfAShardAndLeaveUnitPaddingOut) {
  const model::ParamLayout layout(tiny(), 3);
  for (int u = 0; u < layout.num_units(); ++u) {
    std::size_t covered = 0;
    for (int r = 0; r < 3; ++r) {
      const model::Range shard = layout.shard(u, r);
      for (const auto& segment : owned_segments(layout, shard)) {
        EXPECT_GE(segment.begin, shard.offset);
        EXPECT_LE(segment.end, shard.offset + shard.size);
        covered += segment.end - segment.begin;
      }
    }
    EXPECT_EQ(covered, layout.units()[static_cast<std::size_t>(u)].numel) << "unit " << u;
  }
}

TEST(OwnedSegments, CarryEachTensorsWeightDecayFlag) {
  const model::ParamLayout layout(tiny(), 1);
  const auto segments = owned_segments(layout, {0, layout.padded_size()});
  ASSERT_EQ(segments.size(), layout.tensors().size());
  for (std::size_t i = 0; i < segments.size(); ++i) {
    EXPECT_EQ(segments[i].decay, layout.tensors()[i].weight_decay) << layout.tensors()[i].name;
  }
}

TEST(ShardOffsets, PlaceEachUnitsPartAfterThePartsOfTheUnitsBefore) {
  const model::ParamLayout layout(tiny(), 4);
  const auto offsets = shard_offsets(layout);
  ASSERT_EQ(offsets.size(), static_cast<std::size_t>(layout.num_units()) + 1);
  EXPECT_EQ(offsets.back(), layout.padded_size() / 4);
}

TEST(PlanBuckets, GroupsUnitsInBackwardOrderWithUnitZeroAloneAndLast) {
  const model::ParamLayout layout(tiny(), 2);  // units: embeddings, h.0, h.1, h.2, ln_f
  const std::size_t block = layout.units()[1].padded_numel;
  const auto buckets = plan_buckets(layout, block + 1);
  // {ln_f, h.2} reaches block + 1; {h.1, h.0} too; embeddings alone.
  ASSERT_EQ(buckets.size(), 3u);
  EXPECT_EQ(buckets[0].first_unit, 3);
  EXPECT_EQ(buckets[0].last_unit, 4);
  EXPECT_EQ(buckets[1].first_unit, 1);
  EXPECT_EQ(buckets[1].last_unit, 2);
  EXPECT_EQ(buckets[2].first_unit, 0);
  EXPECT_EQ(buckets[2].last_unit, 0);
  EXPECT_EQ(buckets[1].offset, layout.units()[1].offset);
  EXPECT_EQ(buckets[1].elements, 2 * block);
}

TEST(PlanBuckets, GivesEveryUnitItsOwnBucketWhenTheSizeIsOneElement) {
  const model::ParamLayout layout(tiny(), 2);
  const auto buckets = plan_buckets(layout, 1);
  ASSERT_EQ(buckets.size(), static_cast<std::size_t>(layout.num_units()));
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    EXPECT_EQ(buckets[b].first_unit, buckets[b].last_unit);
  }
}

TEST(PlanBuckets, RejectsAZeroBucketSize) {
  const model::ParamLayout layout(tiny(), 1);
  EXPECT_THROW(plan_buckets(layout, 0), Error);
}

}  // namespace
}  // namespace autotrain::zero::partition_test
