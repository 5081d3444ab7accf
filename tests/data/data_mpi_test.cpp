// The data layer under mpirun (ctest runs this with 1, 2, 3 and 4 ranks).
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <memory>

#include "autotrain/core/error.hpp"
#include "autotrain/core/mpi.hpp"
#include "autotrain/data/prepare.hpp"
#include "autotrain/data/sampler.hpp"
#include "autotrain/data/shard.hpp"
#include "test_support.hpp"

namespace autotrain::data::data_mpi_test {
namespace {

TEST(DataMpi, EveryRankSeesTheShardsRankZeroPrepared) {
  const testing::SharedTempDir dir;
  if (world_rank() == 0) testing::write_file(dir.path() / "in/train.txt", std::string(1000, 'a'));
  MPI_Barrier(MPI_COMM_WORLD);
  PrepareOptions options;
  options.data_path = dir.path() / "in";
  options.output_dir = dir.path() / "out";
  options.tokenizer = "byte";
  options.show_progress = false;
  const PrepareResult result = prepare_if_needed_collective(options, MPI_COMM_WORLD);
  ASSERT_NE(result.find("train"), nullptr);
  EXPECT_EQ(result.find("train")->tokens, 1001u);
  EXPECT_EQ(TokenDataset::open(dir.path() / "out", "train").num_tokens(), 1001u);
}

TEST(DataMpi, APrepareFailureOnRankZeroIsRaisedOnEveryRank) {
  const testing::SharedTempDir dir;
  PrepareOptions options;
  options.data_path = dir.path() / "does-not-exist";
  options.output_dir = dir.path() / "out";
  options.tokenizer = "byte";
  EXPECT_THROW(prepare_if_needed_collective(options, MPI_COMM_WORLD), CollectiveError);
}

TEST(DataMpi, RankSlicesOfAStepTogetherAreTheSingleRankGlobalBatch) {
  // G = 2 x (12 / W) x W = 24 windows per step for every world size that divides 12.
  const auto W = static_cast<uint64_t>(world_size());
  if (12 % W != 0) GTEST_SKIP() << "world size " << W << " does not divide 12";
  const uint64_t tokens = 16 * 500 + 1;
  SamplerOptions mine{.block_size = 16,
                      .batch_size = 2,
                      .gradient_accumulation = 12 / W,
                      .world_size = W,
                      .rank = static_cast<uint64_t>(world_rank()),
                      .seed = 7};
  SamplerOptions single = mine;
  single.gradient_accumulation = 12, single.world_size = 1, single.rank = 0;
  Sampler sampler(tokens, mine);
  Sampler reference(tokens, single);
  for (int step = 0; step < 25; ++step) {  // 20 steps per epoch: crosses into epoch 1
    std::vector<uint64_t> local;
    for (uint64_t m = 0; m < mine.gradient_accumulation; ++m)
      for (uint64_t b = 0; b < mine.batch_size; ++b) local.push_back(sampler.window(m, b));
    std::vector<uint64_t> gathered(local.size() * W);
    MPI_Allgather(local.data(), static_cast<int>(local.size()), MPI_UINT64_T, gathered.data(),
                  static_cast<int>(local.size()), MPI_UINT64_T, MPI_COMM_WORLD);
    std::vector<uint64_t> expected = reference.global_batch();
    std::sort(gathered.begin(), gathered.end());
    std::sort(expected.begin(), expected.end());
    ASSERT_EQ(gathered, expected) << "step " << step;
    sampler.advance();
    reference.advance();
  }
}

}  // namespace
}  // namespace autotrain::data::data_mpi_test
