#pragma once
// Who still answers (DESIGN.md contract 4). When a collective times out, this rank knows only
// that it waited too long: inside an allreduce it cannot tell which peer is gone. A PeerProbe
// answers the other ranks' probes from a thread of its own; asked after a timeout, it probes
// every rank of its communicator and names those that did not answer in a grace period: a
// stopped or crashed process, or a node cut off from the network. A rank that is merely busy
// (computing, or waiting in another collective) still answers.
//
// While one is alive, the collective timeouts (watchdog.hpp, deadline.hpp) append its report to
// their message before they abort the job.
#include <mpi.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "autotrain/core/owned_comm.hpp"

namespace autotrain {

class PeerProbe {
 public:
  // Collective over `comm` (under the collective timeout): duplicates it, learns every rank's
  // world rank and host name, and starts the answering thread. Installs itself process-wide.
  explicit PeerProbe(MPI_Comm comm);
  ~PeerProbe();
  PeerProbe(const PeerProbe&) = delete;
  PeerProbe& operator=(const PeerProbe&) = delete;

  // Probes every other rank and waits up to `grace_seconds` for their answers. Returns the
  // world ranks that did not answer, in order.
  std::vector<int> silent_ranks(double grace_seconds);

  // "; ranks 2, 3 (on node2) did not answer a probe within 1.2 s: stopped, crashed or cut off
  // from the network", or that every rank answered.
  std::string report(double grace_seconds);

 private:
  void answer();

  OwnedComm comm_;
  int rank_ = 0;
  int size_ = 1;
  std::vector<int> world_ranks_;    // by rank of comm_
  std::vector<std::string> hosts_;  // by rank of comm_
  std::atomic<bool> stopping_{false};
  std::thread answerer_;
};

// The report of the process's PeerProbe, with a grace period fitting `timeout_seconds` (a
// quarter of it, within 1 to 5 s); empty when none is alive or the job has one rank.
std::string peer_probe_report(double timeout_seconds);

}  // namespace autotrain
