#pragma once
// Every rank must train with the same parameters. Ranks on different nodes may read different
// copies of a config file, or see a different environment for ${ENV} values; this check turns
// that into an error before any work instead of a silent divergence.
#include <mpi.h>

#include <cstdint>

#include "autotrain/config/training_params.hpp"

namespace autotrain::config {

// 64-bit FNV-1a of the canonical JSON of `params` (to_json, compact).
uint64_t params_hash(const TrainingParams& params);

// Collective over `comm`: gathers every rank's params_hash(). When some ranks differ from rank
// 0, each of them logs which parameters differ (with both values), and every rank throws a
// CollectiveError naming the ranks, e.g. "ranks 2, 3 resolved different parameters than rank 0
// (check that every node sees the same config file and environment)".
void check_same_params_across_ranks(const TrainingParams& params, MPI_Comm comm);

}  // namespace autotrain::config
