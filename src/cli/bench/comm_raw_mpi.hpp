#pragma once
// `bench comm --backend raw-mpi`: a plain blocking MPI loop behind the Communicator interface,
// nothing of ours in the way; the reference the mpi backend is held to.
#include <mpi.h>

#include <cstddef>
#include <memory>

#include "autotrain/comm/communicator.hpp"

namespace autotrain::cli {

// Throws CollectiveError where raw MPI cannot run the benchmark: 16-bit floats and avg (MPI has
// neither), or `max_count` (the largest count one call of the benchmark passes) beyond MPI's int.
void check_raw_mpi_supports(DType dtype, ReduceOp op, std::size_t max_count);

// Over a duplicate of `parent` (collective over it).
std::unique_ptr<Communicator> make_raw_mpi_communicator(MPI_Comm parent);

}  // namespace autotrain::cli
