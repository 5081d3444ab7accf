#include "autotrain/ckpt/checkpoint_dir.hpp"

#include <algorithm>
#include <charconv>
#include <fstream>

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
  const fs::path tmp = folder_ / "latest.tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << checkpoint.filename().string() << "\n";
    out.flush();
    AT_CHECK(out.good(), "cannot write ", tmp.string());
  }
  h5::fsync_path(tmp);
  std::error_code error;
  fs::rename(tmp, folder_ / "latest", error);
  AT_CHECK(!error, "cannot rename ", tmp.string(), " to latest: ", error.message());
  h5::fsync_path(folder_);
}

std::vector<fs::path> CheckpointDir::prune(size_t keep) const {
  std::vector<fs::path> removed;
  if (keep == 0) return removed;
  const std::vector<CheckpointEntry> entries = list();
  const std::optional<fs::path> pinned = latest();
  size_t kept = 0;
  for (auto entry = entries.rbegin(); entry != entries.rend(); ++entry) {
    const bool is_latest = pinned && fs::equivalent(*pinned, entry->path);
    if (kept < keep || is_latest) {
      ++kept;
      continue;
    }
    fs::remove(entry->path);
    fs::remove_all(rank_folder(entry->path));
    removed.push_back(entry->path);
  }
  return removed;
}

std::optional<fs::path> CheckpointDir::resolve_auto(MPI_Comm comm,
                                                    std::span<const TensorSpec> expected) const {
  int rank = 0;
  AT_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  // Rank 0 lists (the folder may be on a file system other ranks see late) and broadcasts.
  std::string names;
  if (rank == 0) {
    std::vector<std::string> paths;
    for (const auto& entry : list()) paths.push_back(entry.path.string());
    names = join(paths, "\n");
  }
  uint64_t length = names.size();
  AT_MPI_CHECK(MPI_Bcast(&length, 1, MPI_UINT64_T, 0, comm));
  names.resize(length);
  AT_MPI_CHECK(MPI_Bcast(names.data(), static_cast<int>(length), MPI_CHAR, 0, comm));
  std::vector<std::string> candidates =
      names.empty() ? std::vector<std::string>{} : split(names, '\n');
  for (auto candidate = candidates.rbegin(); candidate != candidates.rend(); ++candidate) {
    std::string why;
    try {
      CheckpointReader reader(*candidate, comm, expected);
      const std::vector<std::string> problems = reader.verify_checksums();
      if (problems.empty()) return fs::path(*candidate);
      why = join(problems, "; ");
    } catch (const CollectiveError& error) {
      why = error.what();
    }
    if (rank == 0) {
      log::warn("skipping checkpoint ", *candidate, ": ", why,
                candidate + 1 != candidates.rend() ? "; falling back to the previous one" : "");
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
      dir.prune(save_total_limit);
    } catch (const std::exception& error) {
      failure = error.what();
    }
  }
  agree_or_throw(failure.empty(), failure, comm);
  return path;
}

}  // namespace autotrain::ckpt
