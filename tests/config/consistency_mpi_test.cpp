// Every rank must resolve the same parameters; a rank that differs is named on every rank.
#include <gtest/gtest.h>
#include <mpi.h>

#include "autotrain/config/consistency.hpp"
#include "autotrain/config/load.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/model/folder.hpp"

namespace autotrain::config::consistency_mpi_test {
namespace {

int rank_of_world() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

int size_of_world() {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

TrainingParams resolved_defaults() {
  ResolvedParams resolved = default_params();
  resolve_params(resolved, model::folder_shape);
  return resolved.params;
}

TEST(SameParamsAcrossRanks, PassesWhenEveryRankResolvedTheSame) {
  EXPECT_NO_THROW(check_same_params_across_ranks(resolved_defaults(), MPI_COMM_WORLD));
}

TEST(SameParamsAcrossRanks, ThrowsOnEveryRankNamingTheLastRankWhenItDiffers) {
  const int size = size_of_world();
  if (size < 2) GTEST_SKIP() << "needs at least 2 ranks";
  TrainingParams params = resolved_defaults();
  if (rank_of_world() == size - 1) params.lr = 1e-4;  // e.g. another node's config copy
  try {
    check_same_params_across_ranks(params, MPI_COMM_WORLD);
    ADD_FAILURE() << "expected a CollectiveError";
  } catch (const CollectiveError& error) {
    EXPECT_EQ(std::string(error.what()),
              "rank " + std::to_string(size - 1) +
                  " resolved different parameters than rank 0 (check that every node sees the "
                  "same config file and environment)");
  }
}

TEST(SameParamsAcrossRanks, NamesEveryDifferingRank) {
  const int size = size_of_world();
  if (size < 3) GTEST_SKIP() << "needs at least 3 ranks";
  TrainingParams params = resolved_defaults();
  if (rank_of_world() >= 1) params.data_path = "/node-local/" + std::to_string(rank_of_world());
  std::string expected = "ranks 1";
  for (int rank = 2; rank < size; ++rank) expected += ", " + std::to_string(rank);
  try {
    check_same_params_across_ranks(params, MPI_COMM_WORLD);
    ADD_FAILURE() << "expected a CollectiveError";
  } catch (const CollectiveError& error) {
    EXPECT_EQ(std::string(error.what()).rfind(expected + " resolved different parameters", 0), 0u)
        << error.what();
  }
}

TEST(SameParamsAcrossRanks, HashDependsOnEveryValue) {
  TrainingParams params = resolved_defaults();
  const uint64_t before = params_hash(params);
  params.warmup_ratio = 0.1000000000000001;
  EXPECT_NE(params_hash(params), before);
}

}  // namespace
}  // namespace autotrain::config::consistency_mpi_test
