#pragma once
// Where a rank's Gloo device listens: an IPv4 address the other ranks reach. In this order:
//   GLOO_SOCKET_IFNAME or AUTOTRAIN_GLOO_IFNAME   the address of that interface;
//   AUTOTRAIN_GLOO_HOSTNAME                       that name or address, resolved here;
//   all ranks on one node                          127.0.0.1;
//   else                                           the local address of the route towards rank
//                                                  0's address (MASTER_ADDR), as NCCL's bootstrap
//                                                  picks the interface that reaches its root.
// Gloo is handed the address itself, never a host name to resolve or an interface to look up:
// Gloo 0.5 crashes (SIGSEGV) when a host name does not resolve. `autotrain doctor` shows each
// node's choice.
#include <mpi.h>

#include <string>

#include "autotrain/launch/launcher_env.hpp"

namespace autotrain {

struct GlooAddress {
  std::string address;  // "10.201.0.11"
  std::string how;      // "the route to rank 0 at 10.201.0.11, via eth0"
};

// What the choice needs from the other ranks, collective over `comm`: whether all ranks share
// this node, and rank 0's address (the other nodes' way to it). Never throws on one rank alone.
struct GlooPeers {
  bool one_node = false;
  std::string root_address;
};
GlooPeers gloo_peers(MPI_Comm comm);

// Local: the address by the rules above. Throws Error naming the variable or route, this host
// and its interfaces when none gives one.
GlooAddress choose_gloo_address(const GlooPeers& peers, const EnvLookup& env);

}  // namespace autotrain
