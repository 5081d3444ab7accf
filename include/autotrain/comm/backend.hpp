#pragma once
// Which communicator a job uses: `comm_backend: auto|nccl|gloo|mpi`.
#include <string_view>

#include "autotrain/launch/topology.hpp"

namespace autotrain {

enum class CommBackend { automatic, nccl, gloo, mpi };

// Parses auto|nccl|gloo|mpi; throws Error naming `source` (a flag or config key) otherwise.
CommBackend parse_comm_backend(std::string_view text, std::string_view source);
std::string_view comm_backend_name(CommBackend backend);

bool build_has_nccl();

// `auto` = NCCL when the build has NCCL and this rank has a GPU, else MPI. Asking for NCCL
// without a GPU or without an NCCL build throws Error saying which, suggesting gloo or mpi.
CommBackend resolve_comm_backend(CommBackend requested, const Topology& topology);

}  // namespace autotrain
