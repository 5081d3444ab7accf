#pragma once
// A folder of checkpoints (project_name/checkpoints/): `checkpoint-<step>.h5` files (and their
// `checkpoint-<step>.ranks/` folders in the per-rank layout) plus `latest`, a one-line text file
// naming the checkpoint to resume from, and `commits`, the order they were saved in. Only committed
// checkpoints are listed: `*.tmp` names are unfinished saves.
#include <mpi.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "autotrain/ckpt/checkpoint.hpp"

namespace autotrain::ckpt {

struct CheckpointEntry {
  int64_t step = 0;
  std::filesystem::path path;
};

class CheckpointDir {
 public:
  explicit CheckpointDir(std::filesystem::path folder);

  const std::filesystem::path& folder() const { return folder_; }
  std::filesystem::path path_for(int64_t step) const;  // <folder>/checkpoint-<step>.h5

  // Committed checkpoints, oldest step first.
  std::vector<CheckpointEntry> list() const;
  // The checkpoint `latest` names, when `latest` exists and names an existing file.
  std::optional<std::filesystem::path> latest() const;
  // Points `latest` at `checkpoint` atomically (latest.tmp, fsync, rename, fsync folder).
  // Called by one rank.
  void set_latest(const std::filesystem::path& checkpoint) const;
  // The commit order: `commits`, one checkpoint name per line, oldest commit first (rewritten
  // atomically by record_commit after each save, by one rank). Steps do not give it: a run
  // resumed from checkpoint-20 of a run that reached 60 commits 24 after 60.
  std::vector<std::string> commits() const;
  void record_commit(const std::filesystem::path& checkpoint) const;
  // Where a resume looks, in order: the checkpoint `latest` names, then the others newest
  // commit first, then any not in `commits` (saved by an older autotrain) highest step first.
  std::vector<std::filesystem::path> newest_first() const;
  // save_total_limit: keeps the `keep` most recently committed checkpoints and the one
  // `latest` names; removes the others (with their rank folders). 0 keeps everything. Returns
  // what was removed.
  std::vector<std::filesystem::path> prune(size_t keep) const;

  // Removes what killed saves and prunes left: `checkpoint-*.tmp` files and folders and rank
  // folders without their master file. Only while no save is in flight (save_checkpoint calls
  // it after committing; the project lock keeps other runs out). Returns what was removed.
  std::vector<std::filesystem::path> remove_leftovers() const;

  // Collective: the first checkpoint of newest_first(), `refused` left out, that opens, has the
  // `expected` datasets, passes its checksums and `check` (the caller's test of its run state:
  // it throws an Error to refuse it). Each one skipped is reported with a warning naming it and
  // why. nullopt when the folder has no valid checkpoint. With `verify_tensors` false only the
  // run state's checksum is checked here (no tensor is read): for a caller that verifies the
  // tensors as it loads them and calls again, with the failed one in `refused`.
  using ReaderCheck = std::function<void(const CheckpointReader&)>;
  std::optional<std::filesystem::path> resolve_auto(
      MPI_Comm comm, std::span<const TensorSpec> expected = {}, const ReaderCheck& check = {},
      bool verify_tensors = true, std::span<const std::filesystem::path> refused = {}) const;

 private:
  // The committed checkpoints, newest commit first, then those not in `commits` by step.
  std::vector<std::filesystem::path> by_commit() const;

  std::filesystem::path folder_;
};

// Collective: writes content to dir.path_for(content.state.step), then (rank 0) points `latest`
// at it and applies save_total_limit. Returns the checkpoint's path.
std::filesystem::path save_checkpoint(const CheckpointDir& dir, const CheckpointContent& content,
                                      const WriteOptions& options, size_t save_total_limit,
                                      MPI_Comm comm);

}  // namespace autotrain::ckpt
