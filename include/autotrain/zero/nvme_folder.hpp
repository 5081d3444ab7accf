#pragma once
// The folders of the NVMe offload (zero/nvme_state.hpp keeps its files there): nvme_path's
// per-rank form and the check that every rank's folder is its node's own, which run set-up
// makes before any engine creates a file.
#include <filesystem>
#include <string>

#include "autotrain/comm/communicator.hpp"

namespace autotrain::zero {

// "%r" in nvme_path is the rank: "/scratch/$USER/nvme-%r" gives each rank a folder of its own,
// which a shared file system can then hold. The folder of such a path is created when missing
// (its parent must exist); a path without "%r" is used as it is.
std::filesystem::path nvme_rank_folder(const std::string& nvme_path, int rank);

// Refuses a folder that ranks on different hosts see as the same (a shared file system), and a
// folder missing or not writable on some rank. Collective over `comm`, whose collectives must
// take host buffers (mpi, gloo). Each rank writes a marker file named after the job and its rank
// into `folder`; after a barrier, each looks for the markers of the ranks on other hosts. Ranks
// on one host may share a folder. Throws the same CollectiveError on every rank, naming the
// folder and the two hosts. `host` is this rank's host name (empty: this host's; the tests fake
// several hosts on one machine).
void check_node_local(const std::filesystem::path& folder, Communicator& comm,
                      const std::string& host = {});

}  // namespace autotrain::zero
