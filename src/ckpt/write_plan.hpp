#pragma once
// Private to the ckpt layer: what the ranks check and agree on before a checkpoint is written
// (writer.cpp): a valid tensor list, the same on every rank, and pieces that own every element
// of every tensor exactly once.
#include <mpi.h>

#include <cstdint>
#include <vector>

#include "autotrain/ckpt/checkpoint.hpp"

namespace autotrain::ckpt {

// One owned range as every rank sees it after the all-gather; `parts`: the transfers it takes
// (a streamed piece moves in parts).
struct PieceRecord {
  uint64_t tensor = 0;
  uint64_t offset = 0;
  uint64_t count = 0;
  uint64_t parts = 0;
  uint64_t rank = 0;
};

// Names that are relative paths outside run_state/, lengths that are their shapes' products, no
// name listed twice or also a group of another. Throws Error.
void check_specs(const std::vector<TensorSpec>& tensors);

// FNV-1a over the tensor list: ranks disagreeing on it would write different files.
uint64_t spec_fingerprint(const std::vector<TensorSpec>& tensors);

// Every rank's pieces, gathered on every rank (collective over `comm`).
std::vector<PieceRecord> gather_pieces(const CheckpointContent& content, MPI_Comm comm);

// Every element of every tensor must be owned by exactly one rank. Every rank holds the same
// records, so every rank reaches the same verdict (a CollectiveError, said once).
void check_ownership(const std::vector<TensorSpec>& tensors, std::vector<PieceRecord> records);

}  // namespace autotrain::ckpt
