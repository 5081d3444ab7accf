#include "autotrain/train/project_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "autotrain/core/error.hpp"
#include "autotrain/core/mpi.hpp"
#include "autotrain/core/strings.hpp"

namespace autotrain::train {
namespace fs = std::filesystem;

namespace {

std::string read_all(int fd) {
  std::string text;
  char buffer[256];
  ::lseek(fd, 0, SEEK_SET);
  for (ssize_t got; (got = ::read(fd, buffer, sizeof buffer)) > 0;) {
    text.append(buffer, static_cast<size_t>(got));
  }
  return trim(text);
}

// Returns the open, locked descriptor, or throws Error saying who holds the lock.
int take_lock(const fs::path& project) {
  fs::create_directories(project);
  const fs::path path = project / ".lock";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  AT_CHECK(fd >= 0, "cannot open ", path.string(), ": ", std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int saved = errno;
    const std::string holder = read_all(fd);
    ::close(fd);
    if (saved == EWOULDBLOCK) {
      throw Error(cat("project ", project.string(), " is in use by another run (",
                      holder.empty() ? "holder unknown" : holder, "; ", path.string(),
                      "): wait for it to end, stop it, or give this run another project_name"));
    }
    throw Error(cat("cannot lock ", path.string(), ": ", std::strerror(saved)));
  }
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  const std::string text = cat("host ", host, " pid ", ::getpid(), "\n");
  if (::ftruncate(fd, 0) == 0) {
    [[maybe_unused]] const ssize_t written = ::write(fd, text.data(), text.size());
  }
  return fd;
}

}  // namespace

ProjectLock::ProjectLock(const fs::path& project, MPI_Comm comm) {
  std::string failure;
  if (comm_rank(comm) == 0) {
    try {
      fd_ = take_lock(project);
    } catch (const std::exception& error) {
      failure = error.what();
    }
  }
  agree_or_throw(failure.empty(), failure, comm, "the project lock");
}

ProjectLock::~ProjectLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the flock; the file stays (removing it would race)
}

}  // namespace autotrain::train
