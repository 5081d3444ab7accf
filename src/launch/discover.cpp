#include "autotrain/launch/discover.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "autotrain/core/error.hpp"
#include "autotrain/core/log.hpp"
#include "autotrain/core/mpi.hpp"
#include "autotrain/core/owned_comm.hpp"
#include "autotrain/core/strings.hpp"
#include "autotrain/launch/device.hpp"
#include "autotrain/launch/network.hpp"

namespace autotrain {
namespace {

void broadcast_string(std::string& text, int root, MPI_Comm comm) {
  int length = static_cast<int>(text.size());
  AT_MPI_CHECK(MPI_Bcast(&length, 1, MPI_INT, root, comm));
  text.resize(static_cast<size_t>(length));
  AT_MPI_CHECK(MPI_Bcast(text.data(), length, MPI_CHAR, root, comm));
}

// Every rank's string, same order as ranks.
std::vector<std::string> allgather_strings(const std::string& mine, MPI_Comm comm) {
  int size = 1;
  AT_MPI_CHECK(MPI_Comm_size(comm, &size));
  int length = static_cast<int>(mine.size());
  std::vector<int> lengths(static_cast<size_t>(size));
  AT_MPI_CHECK(MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, comm));
  std::vector<int> offsets(static_cast<size_t>(size), 0);
  for (size_t i = 1; i < offsets.size(); ++i) offsets[i] = offsets[i - 1] + lengths[i - 1];
  std::string all(static_cast<size_t>(offsets.back() + lengths.back()), '\0');
  AT_MPI_CHECK(MPI_Allgatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(),
                              offsets.data(), MPI_CHAR, comm));
  std::vector<std::string> strings;
  for (size_t i = 0; i < lengths.size(); ++i) {
    strings.push_back(all.substr(static_cast<size_t>(offsets[i]), static_cast<size_t>(lengths[i])));
  }
  return strings;
}

// Rank-local part of discovery; MPI collectives only. Throws Error on MPI failures.
Topology map_ranks(MPI_Comm world, const DiscoverOptions& options, const EnvLookup& env) {
  Topology topology;
  AT_MPI_CHECK(MPI_Comm_rank(world, &topology.rank));
  AT_MPI_CHECK(MPI_Comm_size(world, &topology.world_size));
  topology.hostname = host_name();
  topology.master_port = options.master_port;

  // Ranks sharing memory are one node; the key keeps local ranks in world-rank order.
  const OwnedComm node = OwnedComm::split_by_node(world, topology.rank);
  AT_MPI_CHECK(MPI_Comm_rank(node.get(), &topology.local_rank));
  AT_MPI_CHECK(MPI_Comm_size(node.get(), &topology.local_world_size));

  // A node is named by its lowest world rank (its local rank 0); node ranks follow that order.
  int node_leader = topology.rank;
  AT_MPI_CHECK(MPI_Bcast(&node_leader, 1, MPI_INT, 0, node.get()));
  std::vector<int> leaders(static_cast<size_t>(topology.world_size));
  AT_MPI_CHECK(MPI_Allgather(&node_leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, world));
  std::sort(leaders.begin(), leaders.end());
  leaders.erase(std::unique(leaders.begin(), leaders.end()), leaders.end());
  topology.num_nodes = static_cast<int>(leaders.size());
  topology.node_rank = static_cast<int>(
      std::lower_bound(leaders.begin(), leaders.end(), node_leader) - leaders.begin());

  topology.master_addr = topology.rank == 0 ? host_address() : std::string();
  broadcast_string(topology.master_addr, 0, world);

  // Per-rank GPU binding shows as different CUDA_VISIBLE_DEVICES among the ranks of a node.
  const std::string visible_devices = env("CUDA_VISIBLE_DEVICES").value_or("");
  std::vector<std::string> node_visible = allgather_strings(visible_devices, node.get());
  std::sort(node_visible.begin(), node_visible.end());
  const bool per_rank_visibility =
      !visible_devices.empty() && topology.local_world_size > 1 &&
      std::adjacent_find(node_visible.begin(), node_visible.end()) == node_visible.end();

  topology.visible_gpus = visible_gpu_count();
  if (options.job != nullptr) {
    topology.device = options.job->device;
    return topology;
  }
  topology.device = choose_device({.local_rank = topology.local_rank,
                                   .local_world_size = topology.local_world_size,
                                   .visible_gpus = topology.visible_gpus,
                                   .per_rank_visibility = per_rank_visibility,
                                   .want_gpu = options.want_gpu,
                                   .hostname = topology.hostname,
                                   .cuda_visible_devices = visible_devices});
  return topology;
}

// torchrun's and accelerate's MASTER_ADDR and MASTER_PORT, when the job exported them, are not
// what the rendezvous uses: rank 0's reachable address (Gloo binds to it) and master_port. Said
// once, by rank 0, rather than overridden silently.
void say_replaced_master(const Topology& topology, const EnvLookup& env) {
  if (topology.rank != 0) return;
  const std::string addr = env("MASTER_ADDR").value_or("");
  const std::string port = env("MASTER_PORT").value_or("");
  const std::string ours_port = cat(topology.master_port);
  if ((addr.empty() || addr == topology.master_addr) && (port.empty() || port == ours_port)) return;
  log::info("launch: MASTER_ADDR=", addr.empty() ? "(unset)" : addr,
            " MASTER_PORT=", port.empty() ? "(unset)" : port,
            " from the environment are replaced by ", topology.master_addr, ":", ours_port,
            " (rank 0's reachable address, which the Gloo and NCCL rendezvous bind to, and "
            "master_port; set master_port to choose the port)");
}

}  // namespace

Topology discover_topology(MPI_Comm world, const DiscoverOptions& options, const EnvLookup& env) {
  Topology topology;
  std::string failure;
  try {
    topology = map_ranks(world, options, env);
    topology.launcher = describe_launcher(env);
    if (options.job == nullptr) check_launcher_claims(read_launcher_claims(env), topology);
  } catch (const Error& error) {
    failure = cat("rank topology: ", error.what());
  }
  agree_or_throw(failure.empty(), failure, world);
  say_replaced_master(topology, env);
  return topology;
}

void export_topology(const Topology& topology) {
  const std::pair<const char*, std::string> variables[] = {
      {"RANK", cat(topology.rank)},
      {"LOCAL_RANK", cat(topology.local_rank)},
      {"WORLD_SIZE", cat(topology.world_size)},
      {"LOCAL_WORLD_SIZE", cat(topology.local_world_size)},
      {"NODE_RANK", cat(topology.node_rank)},
      {"MASTER_ADDR", topology.master_addr},
      {"MASTER_PORT", cat(topology.master_port)},
  };
  for (const auto& [name, value] : variables) {
    AT_CHECK(setenv(name, value.c_str(), 1) == 0, "cannot set environment variable ", name, "=",
             value);
  }
}

}  // namespace autotrain
