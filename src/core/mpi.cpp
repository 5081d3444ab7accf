#include "autotrain/core/mpi.hpp"

#include <cstdlib>
#include <vector>

#include "autotrain/core/error.hpp"
#include "autotrain/core/log.hpp"

namespace autotrain {

void throw_mpi_error(int code, const char* call, const char* file, int line) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw Error(
      cat("MPI call failed: ", call, " returned ", code, " (", text, ") at ", file, ":", line));
}

MpiSession::MpiSession(int* argc, char*** argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
#ifdef OMPI_MAJOR_VERSION
    // Open MPI's own MPI-IO (ompio) wrote our shared HDF5 checkpoints at 0.5-1.2 GB/s and read
    // them at 0.5-0.8 GB/s where ROMIO does 1.3-1.6 and 3.4-4.3 on the same disk (4 ranks,
    // docs/benchmarks.md "Checkpoints"): prefer ROMIO unless the user chose an io component.
    // "^ompio" excludes ompio rather than naming ROMIO's version-specific component.
    setenv("OMPI_MCA_io", "^ompio", 0);
#endif
    AT_MPI_CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &thread_level_));
    owns_ = true;
  } else {
    MPI_Query_thread(&thread_level_);
  }
  // Errors come back as codes and become exceptions with a message, instead of aborting silently.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  log::set_rank(rank_);
}

MpiSession::~MpiSession() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (owns_ && !finalized) MPI_Finalize();
}

int world_rank() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  int rank = 0;
  if (initialized) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

int world_size() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  int size = 1;
  if (initialized) MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

int comm_rank(MPI_Comm comm) {
  int rank = 0;
  AT_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  return rank;
}

int comm_size(MPI_Comm comm) {
  int size = 1;
  AT_MPI_CHECK(MPI_Comm_size(comm, &size));
  return size;
}

void abort_job(int exit_code) {
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized && world_size() > 1) MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::_Exit(exit_code);
}

void agree_or_throw(bool ok, const std::string& message, MPI_Comm comm) {
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  // The lowest failing rank (or `size` when none failed) speaks for everyone.
  int failing = ok ? size : rank;
  int first_failing = size;
  AT_MPI_CHECK(MPI_Allreduce(&failing, &first_failing, 1, MPI_INT, MPI_MIN, comm));
  if (first_failing == size) return;
  int length = rank == first_failing ? static_cast<int>(message.size()) : 0;
  AT_MPI_CHECK(MPI_Bcast(&length, 1, MPI_INT, first_failing, comm));
  std::string text =
      rank == first_failing ? message : std::string(static_cast<size_t>(length), '\0');
  AT_MPI_CHECK(MPI_Bcast(text.data(), length, MPI_CHAR, first_failing, comm));
  if (size > 1 && first_failing != 0) text = cat("[rank ", first_failing, "] ", text);
  throw CollectiveError(text);
}

}  // namespace autotrain
