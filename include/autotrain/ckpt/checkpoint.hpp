#pragma once
// Checkpoints as logical tensors (DESIGN.md contract 3, docs/checkpoint-format.md).
//
// The writer and the reader know nothing about models or ZeRO: a checkpoint is a list of named
// 1-D fp32 tensors of full logical length, plus run state. Each rank hands the writer the
// pieces it owns (any number of disjoint ranges per tensor, possibly none); together the ranks
// must own every element exactly once. A reader of any world size asks for the ranges it owns
// under its own partition.
//
// Every function and method here is collective over the communicator it was given: all ranks
// call it, in the same order, with the same tensor names.
#include <mpi.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace autotrain::ckpt {

inline constexpr std::string_view kFormatName = "autotrain-checkpoint";
// Bumped on any change a version-1 reader would misread (docs/checkpoint-format.md, Versioning).
inline constexpr int kFormatVersion = 1;
inline constexpr std::string_view kChecksumAlgorithm = "sum-fmix64";

// A logical tensor: a 1-D fp32 dataset of `length` elements at path `name`
// ("model/transformer.h.0.attn.c_attn.weight", "optimizer/exp_avg/<param>"); `shape` is its
// logical shape (product == length), stored as an attribute.
struct TensorSpec {
  std::string name;
  uint64_t length = 0;
  std::vector<uint64_t> shape;
};

// Elements that are not in memory (an optimizer state on NVMe): a save reads them, a load
// writes them, in parts of at most `part` elements through a buffer of the checkpoint's own, so
// neither ever holds the whole range. `at` counts from the range's first element.
struct Stream {
  uint64_t length = 0;
  uint64_t part = uint64_t{1} << 22;                                  // 16 MiB of fp32
  std::function<void(uint64_t at, std::span<float> out)> read;        // a save's source
  std::function<void(uint64_t at, std::span<const float> in)> write;  // a load's sink
};

// Elements [offset, offset + size()) of tensors[tensor], held by this rank: in memory (`data`),
// or streamed (`stream.read` set, `data` empty).
struct Piece {
  size_t tensor = 0;
  uint64_t offset = 0;
  std::span<const float> data;
  Stream stream = {};
  bool streamed() const { return static_cast<bool>(stream.read); }
  uint64_t size() const { return streamed() ? stream.length : data.size(); }
};

// Run state. Scalars are taken from rank 0; `per_rank` rows come from every rank.
struct RunState {
  int64_t step = 0;
  int64_t epoch = 0;
  int64_t consumed_samples = 0;
  int zero_stage = 0;
  // name -> JSON text (training_params, model_config, scheduler, data_position, ...).
  std::map<std::string, std::string> json;
  // name -> this rank's row of a [world_size, K] uint64 dataset (e.g. RNG states); K must be
  // the same on every rank.
  std::map<std::string, std::vector<uint64_t>> per_rank;
};

struct CheckpointContent {
  std::vector<TensorSpec> tensors;
  std::vector<Piece> pieces;
  RunState state;
};

enum class Layout { shared, per_rank };
std::string_view layout_name(Layout layout);  // "shared" | "per-rank"
// Parses shared|per-rank (per_rank accepted); throws Error naming `what` otherwise.
Layout parse_layout(std::string_view text, std::string_view what);

struct WriteOptions {
  Layout layout = Layout::shared;
  // H5Pset_alignment: objects of at least `alignment_threshold` bytes start on a multiple of
  // `alignment`. 1 MiB matches Lustre's default stripe and is a multiple of every common
  // file-system block, so large tensors never share a stripe with a neighbour's tail, while
  // small tensors (biases, norms) stay packed. Set both to the stripe size on Lustre/GPFS.
  uint64_t alignment_threshold = 1u << 20;
  uint64_t alignment = 1u << 20;
};

// Writes the checkpoint to `path` atomically: under `<path>.tmp` (and, for per-rank, the rank
// folder `<stem>.ranks.tmp/`), flushed, fsynced, then renamed. Checks collectively that the
// ranks agree on the tensor list and own every element exactly once (CollectiveError
// otherwise). Does not touch `latest` (see CheckpointDir).
void write_checkpoint(const std::filesystem::path& path, const CheckpointContent& content,
                      const WriteOptions& options, MPI_Comm comm);

// The folder holding the rank files of a per-rank checkpoint at `path` ("checkpoint-7.h5" ->
// "checkpoint-7.ranks").
std::filesystem::path rank_folder(const std::filesystem::path& path);

struct DatasetInfo {
  std::string name;
  uint64_t length = 0;
  std::vector<uint64_t> shape;
  uint64_t checksum = 0;
};

struct CheckpointInfo {
  std::string format;
  int format_version = 0;
  std::string autotrain_version;
  Layout layout = Layout::shared;
  int64_t step = 0;
  int64_t epoch = 0;
  int64_t consumed_samples = 0;
  int world_size = 0;
  int zero_stage = 0;
  std::vector<DatasetInfo> datasets;  // sorted by name
  std::map<std::string, std::string> json;
  std::map<std::string, std::vector<std::vector<uint64_t>>> per_rank;  // name -> rows
  std::optional<uint64_t> run_state_checksum;  // of everything above but the datasets
  uint64_t total_bytes() const;
};

// Elements [offset, offset + size()) of a tensor, read into `out`, or streamed into
// `stream.write` (`out` empty).
struct ReadRange {
  uint64_t offset = 0;
  std::span<float> out;
  Stream stream = {};
  bool streamed() const { return static_cast<bool>(stream.write); }
  uint64_t size() const { return streamed() ? stream.length : out.size(); }
};

// An open checkpoint. Opening checks the format name and version, reads all run state (on
// every rank) and, when `expected` is given, that each expected tensor is present with its
// length. A file that is truncated, corrupt or not a checkpoint is refused with an Error
// naming it.
class CheckpointReader {
 public:
  CheckpointReader(const std::filesystem::path& path, MPI_Comm comm,
                   std::span<const TensorSpec> expected = {});
  ~CheckpointReader();
  CheckpointReader(const CheckpointReader&) = delete;
  CheckpointReader& operator=(const CheckpointReader&) = delete;

  const CheckpointInfo& info() const;
  const std::filesystem::path& path() const;
  const DatasetInfo* find(std::string_view name) const;

  // Collective: each rank reads its own ranges (any number, possibly none) of tensor `name`,
  // and adds their checksum terms to its partial sum of that dataset (for verify_reads).
  void read(std::string_view name, std::span<const ReadRange> ranges);
  void read(std::string_view name, uint64_t offset, std::span<float> out);

  // Collective: the check of what read() delivered, without reading anything again. For every
  // dataset some rank read, the partial sums of all ranks are added (one all-reduce) and
  // compared with the stored checksum; valid because the checksum is a sum over elements
  // (checksum.hpp). The ranks must together have read each such dataset exactly once: a
  // dataset read in part, or twice, is reported as unverifiable. Returns one line per bad
  // dataset (empty when all are good), the same on every rank; the partial sums start again.
  std::vector<std::string> verify_reads();

  // Collective: every rank reads and checksums an equal share of every dataset; the sums are
  // combined and compared with the stored checksums; verify_run_state() too. Returns one line
  // per bad dataset (empty when all are good).
  std::vector<std::string> verify_checksums();

  // The run state's checksum (run_state_checksum), compared on every rank with the broadcast
  // description: reads no tensor. One line when it does not match, empty otherwise.
  std::vector<std::string> verify_run_state() const;

  // Bytes of tensor data this rank has read from the file since it was opened (read() and
  // verify_checksums(); the description is not counted).
  uint64_t bytes_read() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace autotrain::ckpt
