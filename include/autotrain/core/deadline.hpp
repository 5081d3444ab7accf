#pragma once
// Deadlines for the collectives made outside a Communicator (DESIGN.md contract 4): run set-up,
// agreement checks, data preparation, checkpoint and export I/O. A rank that waits in one of
// them for longer than the collective timeout (comm_timeout) logs what it was doing and aborts
// the job, so a stopped, crashed or diverging rank never leaves the others hanging.
#include <mpi.h>

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace autotrain {

// The seconds any collective may take; 600 until the run's parameters set comm_timeout.
void set_collective_timeout(double seconds);
double collective_timeout();

// While alive, `operation` is a collective in flight on this rank: if it is still alive after
// the collective timeout, one thread logs it ("collective timeout: mpi <operation> #k on rank
// r did not complete ...") and aborts the job. For blocking calls that cannot be polled, such
// as the collective HDF5 writes.
class CollectiveDeadline {
 public:
  explicit CollectiveDeadline(std::string operation);
  ~CollectiveDeadline();
  CollectiveDeadline(const CollectiveDeadline&) = delete;
  CollectiveDeadline& operator=(const CollectiveDeadline&) = delete;

 private:
  std::string operation_;  // the watchdog keeps a view of it until the destructor
  std::uint64_t sequence_;
};

// Waits for non-blocking MPI requests under the collective timeout. Past it, logs `operation`
// and the peers whose requests had not completed (peers[i] is the rank behind requests[i]; -1
// leaves it out), and aborts the job.
void wait_or_abort(std::span<MPI_Request> requests, std::span<const int> peers,
                   std::string_view operation);
void wait_or_abort(MPI_Request& request, std::string_view operation);

// MPI_Comm_dup of `parent` under the collective timeout (MPI_Comm_idup, then wait_or_abort).
MPI_Comm duplicate_comm(MPI_Comm parent, std::string_view operation);

// Runs `work` on rank 0 of `comm` while the other ranks wait for it to end, however long it
// takes (data preparation): rank 0 sends a heartbeat every quarter of the collective timeout,
// and a waiting rank aborts the job, naming `operation` and rank 0, when none came for a whole
// timeout (rank 0 stopped or died). `work` must not throw (catch, and agree afterwards).
void run_on_root(MPI_Comm comm, std::string_view operation, const std::function<void()>& work);

// "rank 1" or "ranks 1, 3" (at most 16 named, then how many more), for the messages that name
// the ranks a collective waited for.
std::string rank_list(const std::vector<int>& ranks);

// A test aid: with AUTOTRAIN_INJECT_STOP=<rank>:<phase>, that rank stops itself (SIGSTOP, as a
// hung or descheduled process would) when it reaches `phase` ("setup", "prepare", "save", or
// "step": the third training step of the run), so the tests can prove the others end the job
// within comm_timeout instead of waiting forever.
void stop_here_if_asked(std::string_view phase);

}  // namespace autotrain
