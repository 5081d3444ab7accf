// What the ranks check and agree on before a checkpoint is written (write_plan.hpp).
#include "write_plan.hpp"

#include <algorithm>
#include <functional>
#include <numeric>
#include <string>
#include <tuple>

#include "autotrain/core/error.hpp"
#include "autotrain/core/mpi.hpp"
#include "autotrain/core/strings.hpp"
#include "parts.hpp"

namespace autotrain::ckpt {

void check_specs(const std::vector<TensorSpec>& tensors) {
  std::vector<std::string> names;
  for (const auto& spec : tensors) {
    AT_CHECK(!spec.name.empty() && spec.name.front() != '/' && spec.name.back() != '/' &&
                 spec.name.find("//") == std::string::npos,
             "checkpoint tensor name '", spec.name,
             "' is not a relative path like model/<parameter name>");
    AT_CHECK(!spec.name.starts_with("run_state"), "checkpoint tensor name '", spec.name,
             "' is reserved: run_state/ holds the run state");
    AT_CHECK(spec.length > 0, "checkpoint tensor '", spec.name, "' has length 0");
    uint64_t product =
        std::accumulate(spec.shape.begin(), spec.shape.end(), uint64_t{1}, std::multiplies<>());
    AT_CHECK(product == spec.length, "checkpoint tensor '", spec.name, "': shape product ", product,
             " differs from its length ", spec.length);
    names.push_back(spec.name);
  }
  std::sort(names.begin(), names.end());
  auto duplicate = std::adjacent_find(names.begin(), names.end());
  AT_CHECK(duplicate == names.end(), "checkpoint tensor '", *duplicate, "' is listed twice");
  for (size_t i = 0; i + 1 < names.size(); ++i) {
    AT_CHECK(!names[i + 1].starts_with(names[i] + "/"), "checkpoint tensor '", names[i],
             "' cannot also be a group holding '", names[i + 1], "'");
  }
}

uint64_t spec_fingerprint(const std::vector<TensorSpec>& tensors) {
  uint64_t hash = 0xcbf29ce484222325ull;
  auto mix = [&hash](const void* data, size_t size) {
    const auto* bytes = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < size; ++i) hash = (hash ^ bytes[i]) * 0x100000001b3ull;
  };
  for (const auto& spec : tensors) {
    mix(spec.name.data(), spec.name.size() + 1);
    mix(&spec.length, sizeof spec.length);
    for (uint64_t dim : spec.shape) mix(&dim, sizeof dim);
  }
  return hash;
}

std::vector<PieceRecord> gather_pieces(const CheckpointContent& content, MPI_Comm comm) {
  const int size = comm_size(comm);
  std::vector<uint64_t> mine;
  for (const auto& piece : content.pieces) {
    mine.insert(mine.end(), {piece.tensor, piece.offset, piece.size(), part_count(piece)});
  }
  int my_count = static_cast<int>(mine.size());
  std::vector<int> counts(static_cast<size_t>(size));
  AT_MPI_CHECK(MPI_Allgather(&my_count, 1, MPI_INT, counts.data(), 1, MPI_INT, comm));
  std::vector<int> displacements(static_cast<size_t>(size), 0);
  std::partial_sum(counts.begin(), counts.end() - 1, displacements.begin() + 1);
  std::vector<uint64_t> all(static_cast<size_t>(displacements.back() + counts.back()));
  AT_MPI_CHECK(MPI_Allgatherv(mine.data(), my_count, MPI_UINT64_T, all.data(), counts.data(),
                              displacements.data(), MPI_UINT64_T, comm));
  std::vector<PieceRecord> records;
  for (int r = 0; r < size; ++r) {
    for (int i = displacements[static_cast<size_t>(r)];
         i < displacements[static_cast<size_t>(r)] + counts[static_cast<size_t>(r)]; i += 4) {
      const auto at = static_cast<size_t>(i);
      records.push_back({all[at], all[at + 1], all[at + 2], all[at + 3], static_cast<uint64_t>(r)});
    }
  }
  return records;
}

void check_ownership(const std::vector<TensorSpec>& tensors, std::vector<PieceRecord> records) {
  for (const auto& record : records) {
    if (record.tensor >= tensors.size()) {
      throw CollectiveError(cat("checkpoint piece of rank ", record.rank, " names tensor index ",
                                record.tensor, " but only ", tensors.size(), " tensors exist"));
    }
  }
  std::sort(records.begin(), records.end(), [](const PieceRecord& a, const PieceRecord& b) {
    return std::tie(a.tensor, a.offset) < std::tie(b.tensor, b.offset);
  });
  size_t next = 0;
  for (size_t t = 0; t < tensors.size(); ++t) {
    uint64_t covered = 0;
    for (; next < records.size() && records[next].tensor == t; ++next) {
      const PieceRecord& record = records[next];
      if (record.count == 0) continue;
      if (record.offset < covered) {
        throw CollectiveError(
            cat("checkpoint tensor '", tensors[t].name, "': elements [", record.offset, ", ",
                std::min(covered, record.offset + record.count),
                ") are owned by more than one rank (rank ", record.rank, " among them)"));
      }
      if (record.offset > covered) {
        throw CollectiveError(cat("checkpoint tensor '", tensors[t].name, "': elements [", covered,
                                  ", ", record.offset, ") are owned by no rank"));
      }
      covered = record.offset + record.count;
    }
    if (covered != tensors[t].length) {
      throw CollectiveError(cat(
          "checkpoint tensor '", tensors[t].name, "': elements [", covered, ", ", tensors[t].length,
          ") ", covered > tensors[t].length ? "lie past its length" : "are owned by no rank"));
    }
  }
}

}  // namespace autotrain::ckpt
