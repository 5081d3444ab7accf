#pragma once
// MPI lifetime and the job-wide failure path.
#include <mpi.h>

#include <string>

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
  int thread_level() const { return thread_level_; }

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
void agree_or_throw(bool ok, const std::string& message, MPI_Comm comm = MPI_COMM_WORLD);

}  // namespace autotrain
