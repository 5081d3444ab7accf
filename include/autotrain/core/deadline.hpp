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

// Runs `work` on rank 0 of `comm` while the other ranks wait for it to end, however long it
// takes (data preparation): rank 0 sends a heartbeat every quarter of the collective timeout,
// and a waiting rank aborts the job, naming `operation` and rank 0, when none came for a whole
// timeout (rank 0 stopped or died). `work` must not throw (catch, and agree afterwards).
void run_on_root(MPI_Comm comm, std::string_view operation, const std::function<void()>& work);

// The blocking collectives of set-up, agreements and checkpoint I/O, under the collective
// timeout: the non-blocking MPI call, then wait_or_abort(operation). `data` is in place.
void broadcast_or_abort(void* data, int count, MPI_Datatype type, int root, MPI_Comm comm,
                        std::string_view operation);
// `text` of `root` on every rank (its length first).
std::string broadcast_string_or_abort(std::string text, int root, MPI_Comm comm,
                                      std::string_view operation);
void allreduce_or_abort(void* data, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                        std::string_view operation);
void allgather_or_abort(const void* mine, int count, MPI_Datatype type, void* all, MPI_Comm comm,
                        std::string_view operation);
void allgatherv_or_abort(const void* mine, int count, MPI_Datatype type, void* all,
                         const int* counts, const int* displacements, MPI_Comm comm,
                         std::string_view operation);

// "rank 1" or "ranks 1, 3" (at most 16 named, then how many more), for the messages that name
// the ranks a collective waited for.
std::string rank_list(const std::vector<int>& ranks);

// A test aid: with AUTOTRAIN_INJECT_STOP=<rank>:<phase>, that rank stops itself (SIGSTOP, as a
// hung or descheduled process would) when it reaches `phase`, so the tests can prove the others
// end the job within comm_timeout instead of waiting forever. The phases of `autotrain train`, in
// order: "models" (planning the models, before any agreement), "setup" (read the configuration),
// "topology" (after discovering it), "agreed" (set-up agreed on), "lock" (project locked),
// "prepare" (data preparation), "prepared" (data ready), "model" (communicator and replica
// built), "resume" (choosing the checkpoint to resume from), "load" (reading it), "begin" (about
// to initialise or save for the first time), "save" (a checkpoint save), "step" (the third
// training step of the run).
void stop_here_if_asked(std::string_view phase);

}  // namespace autotrain
