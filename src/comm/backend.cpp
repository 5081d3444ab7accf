#include "autotrain/comm/backend.hpp"

#include "autotrain/core/error.hpp"

namespace autotrain {

CommBackend parse_comm_backend(std::string_view text, std::string_view source) {
  if (text == "auto") return CommBackend::automatic;
  if (text == "nccl") return CommBackend::nccl;
  if (text == "gloo") return CommBackend::gloo;
  if (text == "mpi") return CommBackend::mpi;
  throw Error(cat(source, ": unknown communicator backend '", text,
                  "' (expected auto, nccl, gloo or mpi)"));
}

std::string_view comm_backend_name(CommBackend backend) {
  switch (backend) {
    case CommBackend::automatic:
      return "auto";
    case CommBackend::nccl:
      return "nccl";
    case CommBackend::gloo:
      return "gloo";
    case CommBackend::mpi:
      return "mpi";
  }
  return "?";
}

bool build_has_nccl() {
#ifdef AUTOTRAIN_HAVE_NCCL
  return true;
#else
  return false;
#endif
}

CommBackend resolve_comm_backend(CommBackend requested, const Topology& topology) {
  const bool has_gpu = topology.device >= 0;
  if (requested == CommBackend::automatic) {
    return build_has_nccl() && has_gpu ? CommBackend::nccl : CommBackend::mpi;
  }
  if (requested == CommBackend::nccl) {
    if (!build_has_nccl()) {
      throw Error(
          "comm_backend: 'nccl' was requested but this autotrain was built without NCCL "
          "(rebuild with AUTOTRAIN_CUDA=on and NCCL installed), or use comm_backend gloo or mpi on "
          "CPUs");
    }
    if (!has_gpu) {
      throw Error(cat("comm_backend: 'nccl' was requested but rank ", topology.rank, " on ",
                      topology.hostname, " has no GPU; use comm_backend gloo or mpi on CPUs"));
    }
  }
  return requested;
}

}  // namespace autotrain
