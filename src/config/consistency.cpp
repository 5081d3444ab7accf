#include "autotrain/config/consistency.hpp"

#include <string>
#include <vector>

#include "autotrain/config/load.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/log.hpp"
#include "autotrain/core/strings.hpp"

namespace autotrain::config {

uint64_t params_hash(const TrainingParams& params) {
  uint64_t hash = 14695981039346656037ull;  // FNV-1a 64-bit offset basis
  for (unsigned char byte : to_json(params).dump()) {
    hash ^= byte;
    hash *= 1099511628211ull;  // FNV prime
  }
  return hash;
}

namespace {

// Rank 0's canonical JSON, broadcast so a differing rank can say what differs.
nlohmann::ordered_json rank0_json(const TrainingParams& params, MPI_Comm comm, int rank) {
  std::string text = rank == 0 ? to_json(params).dump() : std::string();
  uint64_t size = text.size();
  AT_MPI_CHECK(MPI_Bcast(&size, 1, MPI_UINT64_T, 0, comm));
  text.resize(size);
  AT_MPI_CHECK(MPI_Bcast(text.data(), static_cast<int>(size), MPI_CHAR, 0, comm));
  return nlohmann::ordered_json::parse(text);
}

}  // namespace

void check_same_params_across_ranks(const TrainingParams& params, MPI_Comm comm) {
  int rank = 0;
  int size = 1;
  AT_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  AT_MPI_CHECK(MPI_Comm_size(comm, &size));
  const uint64_t mine = params_hash(params);
  std::vector<uint64_t> hashes(static_cast<size_t>(size));
  AT_MPI_CHECK(MPI_Allgather(&mine, 1, MPI_UINT64_T, hashes.data(), 1, MPI_UINT64_T, comm));

  std::vector<std::string> differing;
  for (int other = 1; other < size; ++other) {
    if (hashes[static_cast<size_t>(other)] != hashes[0]) differing.push_back(std::to_string(other));
  }
  if (differing.empty()) return;

  // Every rank takes part in the broadcast; only the differing ones have something to say.
  const nlohmann::ordered_json reference = rank0_json(params, comm, rank);
  if (mine != hashes[0]) {
    const nlohmann::ordered_json own = to_json(params);
    std::vector<std::string> changes;
    for (const auto& [name, value] : own.items()) {
      const auto found = reference.find(name);
      if (found == reference.end() || *found != value) {
        changes.push_back(cat(name, " = ", value.dump(), " here, ",
                              found == reference.end() ? "absent" : found->dump(), " on rank 0"));
      }
    }
    log::error("parameters differ from rank 0: ", join(changes, "; "));
  }
  throw CollectiveError(cat(differing.size() == 1 ? "rank " : "ranks ", join(differing, ", "),
                            " resolved different parameters than rank 0 (check that every node "
                            "sees the same config file and environment)"));
}

}  // namespace autotrain::config
