#pragma once
// NCCL bootstrap pieces that are testable without a GPU (builds with NCCL only).
#ifdef AUTOTRAIN_HAVE_NCCL
#include <mpi.h>
#include <nccl.h>

namespace autotrain {

// Rank 0 of `comm` creates the NCCL unique id (ncclGetUniqueId needs no GPU) and MPI_Bcast
// hands its 128 bytes to every rank. Collective over `comm`.
ncclUniqueId broadcast_nccl_unique_id(MPI_Comm comm);

}  // namespace autotrain
#endif
