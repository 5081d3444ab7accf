#pragma once
// One JSON document from every rank to rank 0, the way `env` and `doctor` collect what each rank
// found. Collective over `comm`.
#include <mpi.h>

#include <nlohmann/json.hpp>
#include <vector>

namespace autotrain::cli {

// Rank 0 receives every rank's document, in rank order; other ranks get an empty list.
std::vector<nlohmann::json> gather_json(const nlohmann::json& mine, MPI_Comm comm);

}  // namespace autotrain::cli
