#include "autotrain/comm/gloo_address.hpp"

#include <optional>

#include "autotrain/core/deadline.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/mpi.hpp"
#include "autotrain/core/owned_comm.hpp"
#include "autotrain/launch/network.hpp"

namespace autotrain {
namespace {

std::string interface_of(const std::string& address) {
  for (const auto& interface : ipv4_interfaces()) {
    if (interface.address == address) return interface.name;
  }
  return "?";
}

std::string this_host() {
  return cat("host ", host_name(), " (interfaces: ", describe_interfaces(ipv4_interfaces()), ")");
}

}  // namespace

GlooPeers gloo_peers(MPI_Comm comm) {
  int node_size = 0;
  {
    const CollectiveDeadline deadline("Gloo set-up (MPI_Comm_split_type)");
    const OwnedComm node = OwnedComm::split_by_node(comm, 0);
    AT_MPI_CHECK(MPI_Comm_size(node.get(), &node_size));
  }
  int world = 0;
  AT_MPI_CHECK(MPI_Comm_size(comm, &world));
  int rank = 0;
  AT_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  // Every rank must agree, so the one-node test is a collective decision too.
  int spread = node_size == world ? 0 : 1;
  allreduce_or_abort(&spread, 1, MPI_INT, MPI_MAX, comm, "Gloo set-up (one node or several)");
  GlooPeers peers;
  peers.one_node = spread == 0;
  if (!peers.one_node) {
    // The address discover_topology made MASTER_ADDR: rank 0's first reachable interface.
    peers.root_address = broadcast_string_or_abort(rank == 0 ? host_address() : std::string(), 0,
                                                   comm, "Gloo set-up (rank 0's address)");
  }
  return peers;
}

GlooAddress choose_gloo_address(const GlooPeers& peers, const EnvLookup& env) {
  for (const char* variable : {"GLOO_SOCKET_IFNAME", "AUTOTRAIN_GLOO_IFNAME"}) {
    const auto name = env(variable);
    if (!name || name->empty()) continue;
    const auto address = interface_address(*name);
    AT_CHECK(address.has_value(), "gloo: ", variable, "=", *name,
             " names no interface with an IPv4 address on ", this_host());
    return {*address, cat(variable, "=", *name)};
  }
  if (const auto host = env("AUTOTRAIN_GLOO_HOSTNAME"); host && !host->empty()) {
    const auto address = resolve_ipv4(*host);
    AT_CHECK(address.has_value(), "gloo: AUTOTRAIN_GLOO_HOSTNAME=", *host,
             " does not resolve to an IPv4 address on ", this_host());
    return {*address, cat("AUTOTRAIN_GLOO_HOSTNAME=", *host)};
  }
  if (peers.one_node) return {"127.0.0.1", "loopback: every rank on one node"};
  const auto source = route_source_address(peers.root_address);
  AT_CHECK(source.has_value(), "gloo: no route from ", this_host(), " reaches rank 0's address '",
           peers.root_address,
           "'; set GLOO_SOCKET_IFNAME to the interface the nodes share (docs/communication.md)");
  return {*source,
          cat("the route to rank 0 at ", peers.root_address, ", via ", interface_of(*source))};
}

}  // namespace autotrain
