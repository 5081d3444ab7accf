// Preference pairs under mpirun (ctest runs this with 1, 2, 3 and 4 ranks): rank 0 prepares,
// every rank maps the same pairs, and each rank's micro-batches are whole pairs of the step.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>

#include "autotrain/core/error.hpp"
#include "autotrain/core/mpi.hpp"
#include "autotrain/data/preference.hpp"
#include "autotrain/data/sampler.hpp"
#include "test_support.hpp"

namespace autotrain::data::preference_mpi_test {
namespace {

PreferenceOptions options_in(const std::filesystem::path& dir) {
  PreferenceOptions options;
  options.prepare.data_path = dir / "in";
  options.prepare.output_dir = dir / "out";
  options.prepare.tokenizer = "byte";
  options.prepare.text_column = "chosen";
  options.prepare.show_progress = false;
  return options;
}

TEST(PreferenceMpi, EveryRankMapsThePairsRankZeroPrepared) {
  const testing::SharedTempDir dir;
  if (world_rank() == 0) {
    std::string rows;
    for (int i = 0; i < 24; ++i)
      rows += "{\"prompt\": \"p" + std::to_string(i) +
              "\", \"chosen\": \"yes\", \"rejected\": \"no\"}\n";
    testing::write_file(dir.path() / "in/train.jsonl", rows);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  const PreferenceOptions options = options_in(dir.path());
  const PreparedPairs first = prepare_pairs_if_needed_collective(options, MPI_COMM_WORLD);
  EXPECT_FALSE(first.reused);
  const PreparedPairs prepared = prepare_pairs_if_needed_collective(options, MPI_COMM_WORLD);
  EXPECT_TRUE(prepared.reused);
  const PairDataset dataset(*prepared.find("train"));
  ASSERT_EQ(dataset.num_pairs(), 24u);

  // G = 2 x (12 / W) x W = 24: one step is every pair once, whatever the world size.
  const auto W = static_cast<uint64_t>(world_size());
  if (12 % W != 0) GTEST_SKIP() << "world size " << W << " does not divide 12";
  const Sampler sampler = Sampler::over_items(dataset.num_pairs(),
                                              {.batch_size = 2,
                                               .gradient_accumulation = 12 / W,
                                               .world_size = W,
                                               .rank = static_cast<uint64_t>(world_rank()),
                                               .seed = 5},
                                              "preference pairs");
  std::vector<uint64_t> mine, items(2);
  for (uint64_t m = 0; m < 12 / W; ++m) {
    sampler.micro_batch_items(m, items);
    mine.insert(mine.end(), items.begin(), items.end());
  }
  std::vector<uint64_t> all(24);
  MPI_Allgather(mine.data(), static_cast<int>(mine.size()), MPI_UINT64_T, all.data(),
                static_cast<int>(mine.size()), MPI_UINT64_T, MPI_COMM_WORLD);
  std::sort(all.begin(), all.end());
  for (uint64_t i = 0; i < 24; ++i) EXPECT_EQ(all[i], i);
}

TEST(PreferenceMpi, AFailureOnRankZeroIsRaisedOnEveryRank) {
  const testing::SharedTempDir dir;
  if (world_rank() == 0) testing::write_file(dir.path() / "in/train.csv", "prompt,chosen\na,b\n");
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_THROW(prepare_pairs_if_needed_collective(options_in(dir.path()), MPI_COMM_WORLD),
               CollectiveError);
}

}  // namespace
}  // namespace autotrain::data::preference_mpi_test
