#pragma once
// Errors. Every failure a user can cause or meet is an autotrain::Error whose message names the
// file, key or value involved and what was expected. One check macro per external library turns
// its status codes into Errors with file and line (AT_MPI_CHECK here; HDF5, CUDA and NCCL have
// theirs beside their layers).
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace autotrain {

// Concatenates its arguments with operator<< (the project's one string builder).
template <typename... Args>
std::string cat(Args&&... args) {
  std::ostringstream out;
  (out << ... << std::forward<Args>(args));
  return out.str();
}

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// An error every rank meets identically (bad config, bad flag): the job prints it once, from
// rank 0, and every rank exits non-zero without an MPI_Abort.
class CollectiveError : public Error {
 public:
  explicit CollectiveError(const std::string& message) : Error(message) {}
};

// A command line that cannot be parsed (an unknown flag, a flag without its value): a
// CollectiveError that the program reports with exit status 2 instead of 1.
class UsageError : public CollectiveError {
 public:
  explicit UsageError(const std::string& message) : CollectiveError(message) {}
};

[[noreturn]] void throw_mpi_error(int code, const char* call, const char* file, int line);

}  // namespace autotrain

#define AT_CHECK(cond, ...)                                               \
  do {                                                                    \
    if (!(cond)) throw ::autotrain::Error(::autotrain::cat(__VA_ARGS__)); \
  } while (0)

#define AT_MPI_CHECK(call)                                                     \
  do {                                                                         \
    int at_mpi_status_ = (call);                                               \
    if (at_mpi_status_ != 0)                                                   \
      ::autotrain::throw_mpi_error(at_mpi_status_, #call, __FILE__, __LINE__); \
  } while (0)
