#include "autotrain/ckpt/checkpoint_dir.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>

#include "autotrain/core/deadline.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/log.hpp"
#include "autotrain/core/mpi.hpp"
#include "autotrain/core/strings.hpp"
#include "h5_io.hpp"

namespace autotrain::ckpt {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kPrefix = "checkpoint-";
constexpr std::string_view kSuffix = ".h5";

// "checkpoint-120.h5" -> 120; anything else (checkpoint-120.h5.tmp, latest, ...) -> nullopt.
std::optional<int64_t> step_of(const std::string& name) {
  if (!name.starts_with(kPrefix) || !name.ends_with(kSuffix)) return std::nullopt;
  const char* begin = name.data() + kPrefix.size();
  const char* end = name.data() + name.size() - kSuffix.size();
  int64_t step = 0;
  auto [last, error] = std::from_chars(begin, end, step);
  if (error != std::errc() || last != end || begin == end) return std::nullopt;
  return step;
}

// Writes `text` into `path` (created or truncated), naming the reason of a failure (no space,
// file too large, permission, ...); a partial file is removed.
void write_whole_file(const fs::path& path, std::string_view text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  AT_CHECK(fd >= 0, "cannot write ", path.string(), ": ", std::strerror(errno));
  int failure = 0;
  for (size_t done = 0; done < text.size() && failure == 0;) {
    const ssize_t wrote = ::write(fd, text.data() + done, text.size() - done);
    if (wrote < 0 && errno != EINTR) failure = errno;
    if (wrote > 0) done += static_cast<size_t>(wrote);
  }
  if (::close(fd) != 0 && failure == 0) failure = errno;
  if (failure == 0) return;
  std::error_code ignored;
  fs::remove(path, ignored);
  throw Error(cat("cannot write ", path.string(), ": ", std::strerror(failure)));
}

// Replaces folder/name with `text` atomically: name.tmp, fsync, rename, fsync the folder.
void replace_file(const fs::path& folder, const std::string& name, const std::string& text) {
  const fs::path tmp = folder / (name + ".tmp");
  write_whole_file(tmp, text);
  h5::fsync_path(tmp);
  std::error_code error;
  fs::rename(tmp, folder / name, error);
  AT_CHECK(!error, "cannot rename ", tmp.string(), " to ", name, ": ", error.message());
  h5::fsync_path(folder);
}

}  // namespace

CheckpointDir::CheckpointDir(fs::path folder) : folder_(std::move(folder)) {}

fs::path CheckpointDir::path_for(int64_t step) const {
  return folder_ / cat(kPrefix, step, kSuffix);
}

std::vector<CheckpointEntry> CheckpointDir::list() const {
  std::vector<CheckpointEntry> entries;
  std::error_code error;
  if (!fs::is_directory(folder_, error)) return entries;
  for (const auto& item : fs::directory_iterator(folder_)) {
    if (!item.is_regular_file()) continue;
    if (auto step = step_of(item.path().filename().string()))
      entries.push_back({*step, item.path()});
  }
  std::sort(entries.begin(), entries.end(),
            [](const CheckpointEntry& a, const CheckpointEntry& b) { return a.step < b.step; });
  return entries;
}

std::optional<fs::path> CheckpointDir::latest() const {
  std::ifstream in(folder_ / "latest");
  std::string name;
  if (!in || !std::getline(in, name)) return std::nullopt;
  name = trim(name);
  if (name.empty() || name.find('/') != std::string::npos) return std::nullopt;
  std::error_code error;
  if (!fs::is_regular_file(folder_ / name, error)) return std::nullopt;
  return folder_ / name;
}

void CheckpointDir::set_latest(const fs::path& checkpoint) const {
  replace_file(folder_, "latest", checkpoint.filename().string() + "\n");
}

std::vector<std::string> CheckpointDir::commits() const {
  std::vector<std::string> names;
  std::ifstream in(folder_ / "commits");
  for (std::string line; std::getline(in, line);) {
    line = trim(line);
    // A torn last line (a kill during the rewrite cannot make one: it is renamed into place,
    // but a hand edit can) is not a checkpoint name and is skipped.
    if (step_of(line) && line.find('/') == std::string::npos) names.push_back(line);
  }
  return names;
}

void CheckpointDir::record_commit(const fs::path& checkpoint) const {
  const std::string name = checkpoint.filename().string();
  std::vector<std::string> names;
  for (const std::string& earlier : commits()) {
    std::error_code error;
    if (earlier != name && fs::is_regular_file(folder_ / earlier, error)) names.push_back(earlier);
  }
  names.push_back(name);
  std::string text;
  for (const std::string& kept : names) text += kept + "\n";
  replace_file(folder_, "commits", text);
}

namespace {

void add_once(std::vector<fs::path>& order, const fs::path& path) {
  if (std::find(order.begin(), order.end(), path) == order.end()) order.push_back(path);
}

}  // namespace

std::vector<fs::path> CheckpointDir::by_commit() const {
  std::vector<fs::path> order;
  const std::vector<CheckpointEntry> entries = list();
  const std::vector<std::string> committed = commits();
  for (auto name = committed.rbegin(); name != committed.rend(); ++name) {
    const auto listed = std::find_if(entries.begin(), entries.end(), [&](const auto& entry) {
      return entry.path.filename() == *name;
    });
    if (listed != entries.end()) add_once(order, listed->path);
  }
  // Saved before the commit order was recorded: newest step first.
  for (auto entry = entries.rbegin(); entry != entries.rend(); ++entry)
    add_once(order, entry->path);
  return order;
}

std::vector<fs::path> CheckpointDir::newest_first() const {
  std::vector<fs::path> order;
  if (const auto pinned = latest()) order.push_back(*pinned);
  for (const fs::path& path : by_commit()) add_once(order, path);
  return order;
}

std::vector<fs::path> CheckpointDir::prune(size_t keep) const {
  std::vector<fs::path> removed;
  if (keep == 0) return removed;
  const std::optional<fs::path> pinned = latest();
  const std::vector<fs::path> order = by_commit();
  for (size_t i = keep; i < order.size(); ++i) {
    if (pinned && order[i].filename() == pinned->filename()) continue;
    fs::remove(order[i]);
    fs::remove_all(rank_folder(order[i]));
    removed.push_back(order[i]);
  }
  return removed;
}

std::vector<fs::path> CheckpointDir::remove_leftovers() const {
  std::vector<fs::path> removed;
  std::error_code error;
  if (!fs::is_directory(folder_, error)) return removed;
  for (const auto& item : fs::directory_iterator(folder_, error)) {
    const std::string name = item.path().filename().string();
    const bool unfinished = name.starts_with(kPrefix) && name.ends_with(".tmp");
    // A rank folder whose master file is gone: a kill between the two deletions of a prune.
    bool orphan = false;
    if (name.starts_with(kPrefix) && name.ends_with(".ranks")) {
      fs::path master = item.path();
      master.replace_extension(kSuffix);
      orphan = !fs::exists(master, error);
    }
    if (!unfinished && !orphan) continue;
    fs::remove_all(item.path(), error);
    if (!error) removed.push_back(item.path());
  }
  return removed;
}

std::optional<fs::path> CheckpointDir::resolve_auto(MPI_Comm comm,
                                                    std::span<const TensorSpec> expected,
                                                    const ReaderCheck& check, bool verify_tensors,
                                                    std::span<const fs::path> refused) const {
  const int rank = comm_rank(comm);
  stop_here_if_asked("resume");
  // Rank 0 lists (the folder may be on a file system other ranks see late) and broadcasts.
  std::string names;
  if (rank == 0) {
    std::vector<std::string> paths;
    for (const auto& path : newest_first()) paths.push_back(path.string());
    names = join(paths, "\n");
  }
  names = broadcast_string_or_abort(std::move(names), 0, comm,
                                    "the checkpoints to resume from (rank 0 lists them)");
  std::vector<std::string> candidates =
      names.empty() ? std::vector<std::string>{} : split(names, '\n');
  // Every rank holds the same `refused` list, so every rank drops the same candidates.
  std::erase_if(candidates, [&](const std::string& candidate) {
    return std::find(refused.begin(), refused.end(), fs::path(candidate)) != refused.end();
  });
  for (auto candidate = candidates.begin(); candidate != candidates.end(); ++candidate) {
    std::string why;
    try {
      CheckpointReader reader(*candidate, comm, expected);
      const std::vector<std::string> problems =
          verify_tensors ? reader.verify_checksums() : reader.verify_run_state();
      if (problems.empty()) {
        try {
          // The run state is the same broadcast description on every rank, so `check`
          // reaches the same verdict everywhere.
          if (check) check(reader);
          return fs::path(*candidate);
        } catch (const Error& error) {
          why = error.what();
        }
      } else {
        why = join(problems, "; ");
      }
    } catch (const CollectiveError& error) {
      why = error.what();
    }
    if (rank == 0) {
      log::warn("skipping checkpoint ", *candidate, ": ", why,
                candidate + 1 != candidates.end() ? "; falling back to the one saved before it"
                                                  : "; no checkpoint saved before it is left");
    }
  }
  return std::nullopt;
}

fs::path save_checkpoint(const CheckpointDir& dir, const CheckpointContent& content,
                         const WriteOptions& options, size_t save_total_limit, MPI_Comm comm) {
  const fs::path path = dir.path_for(content.state.step);
  write_checkpoint(path, content, options, comm);
  int rank = 0;
  AT_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  std::string failure;
  if (rank == 0) {
    try {
      dir.set_latest(path);
      dir.record_commit(path);
      dir.prune(save_total_limit);
      dir.remove_leftovers();
    } catch (const std::exception& error) {
      failure = error.what();
    }
  }
  agree_or_throw(failure.empty(), failure, comm);
  return path;
}

}  // namespace autotrain::ckpt
