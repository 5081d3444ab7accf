#include "gather_json.hpp"

#include <string>

#include "autotrain/core/error.hpp"
#include "autotrain/core/mpi.hpp"

namespace autotrain::cli {

using nlohmann::json;

std::vector<json> gather_json(const json& mine, MPI_Comm world) {
  int rank = 0;
  int size = 1;
  AT_MPI_CHECK(MPI_Comm_rank(world, &rank));
  AT_MPI_CHECK(MPI_Comm_size(world, &size));
  const std::string text = mine.dump();
  int length = static_cast<int>(text.size());
  std::vector<int> lengths(static_cast<size_t>(size));
  AT_MPI_CHECK(MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, world));
  std::vector<int> offsets(static_cast<size_t>(size), 0);
  for (size_t i = 1; i < offsets.size(); ++i) offsets[i] = offsets[i - 1] + lengths[i - 1];
  std::string all(rank == 0 ? static_cast<size_t>(offsets.back() + lengths.back()) : 0, '\0');
  AT_MPI_CHECK(MPI_Gatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(),
                           offsets.data(), MPI_CHAR, 0, world));
  std::vector<json> rows;
  if (rank != 0) return rows;
  for (size_t i = 0; i < lengths.size(); ++i) {
    rows.push_back(
        json::parse(all.substr(static_cast<size_t>(offsets[i]), static_cast<size_t>(lengths[i]))));
  }
  return rows;
}

}  // namespace autotrain::cli
