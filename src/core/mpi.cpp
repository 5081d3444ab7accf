#include "autotrain/core/mpi.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>
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
