#include "autotrain/core/mpi.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <vector>

#include "autotrain/core/crash_report.hpp"
#include "autotrain/core/deadline.hpp"
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

#ifdef OMPI_MAJOR_VERSION
namespace {

// Whether this Open MPI installed a ROMIO io component as a module: mca_io_romio* in a
// component folder near libmpi: <libdir>/openmpi (a plain install) or
// <libdir>/openmpi/lib/openmpi3 (Debian). A build with ROMIO compiled into libmpi is not seen
// and keeps Open MPI's default.
bool open_mpi_has_romio_module() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&MPI_Init), &info) == 0 || info.dli_fname == nullptr)
    return false;
  namespace fs = std::filesystem;
  std::error_code error;
  const fs::path library = fs::canonical(info.dli_fname, error);
  if (error) return false;
  const auto has_romio = [&](const fs::path& folder) {
    for (const auto& file : fs::directory_iterator(folder, error)) {
      if (file.path().filename().string().starts_with("mca_io_romio")) return true;
    }
    return false;
  };
  const auto openmpi_folders = [&](const fs::path& parent) {
    std::vector<fs::path> folders;
    for (const auto& entry : fs::directory_iterator(parent, error)) {
      // The name first: libdir may hold thousands of entries, and is_directory() is a stat.
      if (entry.path().filename().string().starts_with("openmpi") && entry.is_directory(error))
        folders.push_back(entry.path());
    }
    return folders;
  };
  for (const fs::path& folder : openmpi_folders(library.parent_path())) {
    if (has_romio(folder)) return true;
    for (const fs::path& inner : openmpi_folders(folder / "lib")) {
      if (has_romio(inner)) return true;
    }
  }
  return false;
}

}  // namespace
#endif

namespace {

int requested_thread_level() {
  const char* text = std::getenv("AUTOTRAIN_MPI_THREAD_LEVEL");
  const std::string level = text == nullptr ? "" : text;
  if (level == "single") return MPI_THREAD_SINGLE;
  if (level == "funneled") return MPI_THREAD_FUNNELED;
  if (level == "serialized") return MPI_THREAD_SERIALIZED;
  return MPI_THREAD_MULTIPLE;
}

const char* thread_level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE:
      return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED:
      return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED:
      return "MPI_THREAD_SERIALIZED";
    default:
      return "MPI_THREAD_MULTIPLE";
  }
}

}  // namespace

MpiSession::MpiSession(int* argc, char*** argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
#ifdef OMPI_MAJOR_VERSION
    // Open MPI's own MPI-IO (ompio) wrote our shared HDF5 checkpoints at 0.5-1.2 GB/s and read
    // them at 0.5-0.8 GB/s where ROMIO does 1.3-1.6 and 3.4-4.3 on the same disk (4 ranks,
    // docs/benchmarks.md "Checkpoints"): prefer ROMIO unless the user chose an io component.
    // "^ompio" excludes ompio rather than naming ROMIO's version-specific component; only when
    // a ROMIO module is installed, or no io component would be left.
    if (open_mpi_has_romio_module()) setenv("OMPI_MCA_io", "^ompio", 0);
#endif
    install_crash_report(-1);
    AT_MPI_CHECK(MPI_Init_thread(argc, argv, requested_thread_level(), &thread_level_));
    owns_ = true;
  } else {
    MPI_Query_thread(&thread_level_);
  }
  // Errors come back as codes and become exceptions with a message, instead of aborting silently.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  log::set_rank(rank_);
  install_crash_report(rank_);
}

MpiSession::~MpiSession() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (owns_ && !finalized) MPI_Finalize();
}

void MpiSession::require_thread_multiple() const {
  if (thread_level_ >= MPI_THREAD_MULTIPLE) return;
  throw CollectiveError(cat(
      "MPI granted ", thread_level_name(thread_level_),
      " but autotrain needs MPI_THREAD_MULTIPLE: its communication thread, the background "
      "checkpoint writer and HDF5's MPI-IO call MPI at the same time. Use an MPI built with "
      "thread support (Open MPI has it by default since 3.0), or ask for it where the MPI needs "
      "telling (Cray MPICH: 'export MPICH_MAX_THREAD_SAFETY=multiple' in the job script)"));
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

void agree_or_throw(bool ok, const std::string& message, MPI_Comm comm,
                    std::string_view operation) {
  const int rank = comm_rank(comm);
  const int size = comm_size(comm);
  if (size == 1) {
    if (!ok) throw CollectiveError(message);
    return;
  }
  // The lowest failing rank (or `size` when none failed) speaks for everyone. Rank 0 collects
  // the outcomes point to point, so when one is missing past the timeout it can name the ranks
  // that never arrived; then it sends the verdict back. Every wait is under the deadline.
  constexpr int kTag = 0x4154;  // "AT": apart from any other traffic on `comm`
  const std::string what = cat("agreement on ", operation);
  const int failing = ok ? size : rank;
  int first_failing = failing;
  if (rank == 0) {
    std::vector<int> outcomes(static_cast<size_t>(size), size);
    std::vector<MPI_Request> requests(static_cast<size_t>(size - 1));
    std::vector<int> peers(requests.size());
    for (int r = 1; r < size; ++r) {
      peers[static_cast<size_t>(r - 1)] = r;
      AT_MPI_CHECK(MPI_Irecv(&outcomes[static_cast<size_t>(r)], 1, MPI_INT, r, kTag, comm,
                             &requests[static_cast<size_t>(r - 1)]));
    }
    wait_or_abort(requests, peers, what);
    for (int r = 1; r < size; ++r)
      first_failing = std::min(first_failing, outcomes[static_cast<size_t>(r)]);
    for (int r = 1; r < size; ++r) {
      AT_MPI_CHECK(MPI_Isend(&first_failing, 1, MPI_INT, r, kTag, comm,
                             &requests[static_cast<size_t>(r - 1)]));
    }
    wait_or_abort(requests, peers, what);
  } else {
    MPI_Request requests[2];
    AT_MPI_CHECK(MPI_Isend(&failing, 1, MPI_INT, 0, kTag, comm, &requests[0]));
    AT_MPI_CHECK(MPI_Irecv(&first_failing, 1, MPI_INT, 0, kTag, comm, &requests[1]));
    const int peers[2] = {0, 0};
    wait_or_abort(requests, peers, what);
  }
  if (first_failing == size) return;
  int length = rank == first_failing ? static_cast<int>(message.size()) : 0;
  MPI_Request request = MPI_REQUEST_NULL;
  AT_MPI_CHECK(MPI_Ibcast(&length, 1, MPI_INT, first_failing, comm, &request));
  wait_or_abort(request, what);
  std::string text =
      rank == first_failing ? message : std::string(static_cast<size_t>(length), '\0');
  AT_MPI_CHECK(MPI_Ibcast(text.data(), length, MPI_CHAR, first_failing, comm, &request));
  wait_or_abort(request, what);
  if (first_failing != 0) text = cat("[rank ", first_failing, "] ", text);
  throw CollectiveError(text);
}

bool same_on_all_ranks(long long value, MPI_Comm comm, std::string_view operation) {
  long long extremes[2] = {value, -value};
  MPI_Request request = MPI_REQUEST_NULL;
  AT_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, extremes, 2, MPI_LONG_LONG, MPI_MAX, comm, &request));
  wait_or_abort(request, operation);
  return extremes[0] == -extremes[1];
}

}  // namespace autotrain
