#pragma once
// MPI lifetime and the job-wide failure path.
#include <mpi.h>

#include <string>
#include <string_view>

namespace autotrain {

// Initialises MPI once with MPI_THREAD_MULTIPLE (the communicators' watchdog and Gloo threads
// need it) and finalises it on destruction. Started without a launcher, MPI runs as a singleton
// (world size 1).
class MpiSession {
 public:
  MpiSession(int* argc, char*** argv);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // Throws a CollectiveError, saying how to get it, unless MPI granted MPI_THREAD_MULTIPLE: the
  // communication threads, the background checkpoint writer and HDF5's MPI-IO call MPI
  // concurrently. AUTOTRAIN_MPI_THREAD_LEVEL (single, funneled, serialized) asks for less, to
  // test this path.
  void require_thread_multiple() const;

 private:
  int rank_ = 0;
  int size_ = 1;
  int thread_level_ = 0;
  bool owns_ = false;
};

int world_rank();
int world_size();
// This process's rank in, and the size of, `comm` (checked: an MPI error throws).
int comm_rank(MPI_Comm comm);
int comm_size(MPI_Comm comm);

// Prints nothing; aborts every rank of the job with `exit_code` (MPI_Abort when MPI is up,
// std::exit otherwise). The caller has already logged why.
[[noreturn]] void abort_job(int exit_code);

// Every rank passes its own outcome; if any rank failed, the lowest failing rank's message is
// raised as a CollectiveError on every rank. Must be called by all ranks (it is a collective).
// A rank missing for longer than the collective timeout (deadline.hpp) aborts the job, naming
// `operation` ("the training parameters") and the ranks that did not arrive.
void agree_or_throw(bool ok, const std::string& message, MPI_Comm comm = MPI_COMM_WORLD,
                    std::string_view operation = "a consistency check");

// Whether every rank of `comm` passed the same `value` (a collective under the collective
// timeout, named `operation` if it expires).
bool same_on_all_ranks(long long value, MPI_Comm comm, std::string_view operation);

}  // namespace autotrain
