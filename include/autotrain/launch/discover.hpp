#pragma once
// Finding the topology of the running job from MPI, cross-checked with the launcher's variables.
#include <mpi.h>

#include "autotrain/launch/launcher_env.hpp"
#include "autotrain/launch/topology.hpp"

namespace autotrain {

constexpr int kDefaultMasterPort = 29500;

struct DiscoverOptions {
  int master_port = kDefaultMasterPort;
  bool want_gpu = false;  // a GPU communicator will be used: too few GPUs per node is an error
  // When `world` is one model's group of a job that trains several (model groups): the job's
  // own topology, discovered over the whole job and checked against the launcher first. The
  // group's topology then takes the job's device for each rank and is not checked against the
  // launcher's variables, which describe the job.
  const Topology* job = nullptr;
};

// Collective over `world`. RANK/WORLD_SIZE from MPI; LOCAL_RANK/LOCAL_WORLD_SIZE from
// MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) ordered by world rank; NODE_RANK/NUM_NODES by
// ordering the nodes by their lowest world rank; MASTER_ADDR = an IPv4 address of rank 0's host
// (its hostname when it has none), broadcast; the device by choose_device(). Then every claim in
// `env` is checked against the result (check_launcher_claims): any failure on any rank throws a
// CollectiveError on every rank, so no rank is left waiting.
Topology discover_topology(MPI_Comm world, const DiscoverOptions& options = {},
                           const EnvLookup& env = process_environment());

// Sets RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, NODE_RANK, MASTER_ADDR and MASTER_PORT
// in this process's environment (overwriting), for libraries and child processes.
void export_topology(const Topology& topology);

}  // namespace autotrain
