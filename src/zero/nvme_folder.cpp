// Where each rank's NVMe scratch file may live (nvme_state.hpp): nvme_path's "%r", and the
// collective check that refuses a folder several hosts share. A shared file system would take
// every rank's optimizer state through one server, and ranks on two hosts whose files had the
// same name would destroy each other's state.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "autotrain/core/error.hpp"
#include "autotrain/core/strings.hpp"
#include "autotrain/launch/network.hpp"
#include "nvme_state.hpp"

namespace autotrain::zero {
namespace {

// What every rank tells the others first, as int32 words (the Communicator moves typed
// elements): rank 0's token names the job's marker files; host and folder go into the messages.
struct Announcement {
  std::uint32_t token[2] = {};
  char host[256] = {};     // MPI_MAX_PROCESSOR_NAME in Open MPI and MPICH
  char folder[1024] = {};  // cut with "..." when longer
};
// What each rank found after the barrier.
struct Finding {
  std::int32_t error = 0;        // errno of creating its marker (ENOENT: no folder)
  std::int32_t other_rank = -1;  // a rank on another host whose marker it sees
};
constexpr std::size_t kAnnouncementWords = sizeof(Announcement) / sizeof(std::int32_t);
constexpr std::size_t kFindingWords = sizeof(Finding) / sizeof(std::int32_t);

void copy_text(const std::string& text, char* into, std::size_t capacity) {
  std::string cut = text.size() < capacity ? text : text.substr(0, capacity - 4) + "...";
  std::copy(cut.begin(), cut.end(), into);
}

template <typename Record, std::size_t kWords>
std::vector<Record> allgather(const Record& mine, Communicator& comm) {
  std::vector<Record> all(static_cast<std::size_t>(comm.size()));
  comm.allgather(&mine, all.data(), kWords, DType::int32);
  return all;
}

std::vector<Announcement> announce(const std::filesystem::path& folder, const std::string& host,
                                   Communicator& comm) {
  Announcement mine;
  if (comm.rank() == 0) {
    std::random_device random;
    mine.token[0] = random();
    mine.token[1] = random();
  }
  copy_text(host, mine.host, sizeof mine.host);
  copy_text(folder.string(), mine.folder, sizeof mine.folder);
  return allgather<Announcement, kAnnouncementWords>(mine, comm);
}

// 0, or the errno of creating it.
int create_marker(const std::filesystem::path& marker, const std::string& host) {
  const int fd = ::open(marker.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return errno;
  const std::string text = host + "\n";
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const int code = written ? 0 : errno;
  ::close(fd);
  return code;
}

std::string problem(const std::vector<Announcement>& all, int rank, const Finding& finding) {
  const Announcement& at = all[static_cast<std::size_t>(rank)];
  const std::string where = cat("nvme_path ", at.folder, ": ");
  if (finding.error == ENOENT) {
    return cat(where, "no such folder on host ", at.host, " (rank ", rank, ")");
  }
  if (finding.error != 0) {
    return cat(where, "cannot create a file there on host ", at.host, " (rank ", rank,
               "): ", std::strerror(finding.error), "; each rank needs a writable folder");
  }
  const Announcement& other = all[static_cast<std::size_t>(finding.other_rank)];
  return cat(where, "hosts ", at.host, " and ", other.host, " share this folder (rank ", rank,
             " on ", at.host, " sees the file rank ", finding.other_rank, " wrote on ", other.host,
             "): it is on a file system every node sees. Each rank needs a folder of its own "
             "for its optimizer state: one on the node's local NVMe (such as /local/nvme), or "
             "write %r in nvme_path for a folder per rank (",
             at.folder, "/rank%r)");
}

}  // namespace

std::filesystem::path nvme_rank_folder(const std::string& nvme_path, int rank) {
  if (nvme_path.find("%r") == std::string::npos) return nvme_path;
  const std::filesystem::path folder = replace_all(nvme_path, "%r", std::to_string(rank));
  std::error_code error;
  std::filesystem::create_directory(folder, error);
  if (error) {
    throw Error(cat("nvme_path ", nvme_path, ": cannot create the folder of rank ", rank, ", ",
                    folder.string(), ": ", error.message(), " (its parent must exist)"));
  }
  return folder;
}

void check_node_local(const std::filesystem::path& folder, Communicator& comm,
                      const std::string& host) {
  const std::string me = host.empty() ? host_name() : host;
  const std::vector<Announcement> all = announce(folder, me, comm);
  const auto marker = [&](int rank) {
    return folder / cat(".autotrain-node-local-", std::hex, all[0].token[0], all[0].token[1],
                        std::dec, "-rank", rank);
  };
  Finding mine;
  mine.error = create_marker(marker(comm.rank()), me);
  comm.barrier();  // every marker that will exist exists
  const char* my_host = all[static_cast<std::size_t>(comm.rank())].host;  // as the others see it
  for (int rank = 0; rank < comm.size() && mine.error == 0 && mine.other_rank < 0; ++rank) {
    if (std::strcmp(my_host, all[static_cast<std::size_t>(rank)].host) == 0) continue;
    std::error_code ignored;
    if (std::filesystem::exists(marker(rank), ignored)) mine.other_rank = rank;
  }
  const std::vector<Finding> found = allgather<Finding, kFindingWords>(mine, comm);
  // After the allgather nobody looks any more.
  if (mine.error == 0) {
    std::error_code ignored;
    std::filesystem::remove(marker(comm.rank()), ignored);
  }
  for (int rank = 0; rank < comm.size(); ++rank) {
    const Finding& f = found[static_cast<std::size_t>(rank)];
    if (f.error != 0 || f.other_rank >= 0) throw CollectiveError(problem(all, rank, f));
  }
}

}  // namespace autotrain::zero
