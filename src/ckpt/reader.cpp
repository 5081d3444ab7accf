// Reading a checkpoint with any world size: rank 0 checks the file and reads its description
// (run state, dataset list) once and broadcasts it, so a bad file is one collective error; the
// tensor data is then read by every rank, collectively for the shared layout, independently
// through the virtual datasets for the per-rank layout.
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "autotrain/ckpt/checkpoint.hpp"
#include "autotrain/ckpt/checksum.hpp"
#include "autotrain/core/deadline.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/mpi.hpp"
#include "h5_io.hpp"
#include "parts.hpp"
#include "run_state_io.hpp"

namespace autotrain::ckpt {
namespace fs = std::filesystem;

uint64_t CheckpointInfo::total_bytes() const {
  uint64_t total = 0;
  for (const auto& dataset : datasets) total += dataset.length * sizeof(float);
  return total;
}

namespace {

herr_t collect_dataset(hid_t, const char* name, const H5O_info_t* object, void* out) {
  const std::string path = name;
  if (object->type == H5O_TYPE_DATASET && !path.starts_with("run_state/")) {
    static_cast<std::vector<std::string>*>(out)->push_back(path);
  }
  return 0;
}

DatasetInfo describe_dataset(hid_t file, const std::string& name, const std::string& where) {
  const std::string object = cat(where, ": dataset ", name);
  H5Dataset dataset(AT_H5_CHECK(H5Dopen2(file, name.c_str(), H5P_DEFAULT), object));
  H5Type type(AT_H5_CHECK(H5Dget_type(dataset.get()), object));
  AT_CHECK(H5Tequal(type.get(), H5T_IEEE_F32LE) > 0, object, ": element type is not fp32");
  H5Space space(AT_H5_CHECK(H5Dget_space(dataset.get()), object));
  AT_CHECK(H5Sget_simple_extent_ndims(space.get()) == 1, object,
           ": should be 1-D (its logical shape is the 'shape' attribute)");
  hsize_t length = 0;
  H5Sget_simple_extent_dims(space.get(), &length, nullptr);
  DatasetInfo info;
  info.name = name;
  info.length = length;
  info.shape = h5::read_uint_array_attribute(dataset.get(), "shape", object);
  const std::vector<uint64_t> checksum =
      h5::read_uint_array_attribute(dataset.get(), "checksum", object);
  AT_CHECK(checksum.size() == 1, object, ": attribute 'checksum' should hold one value");
  info.checksum = checksum[0];
  return info;
}

CheckpointInfo read_description(const fs::path& path) {
  const std::string where = path.string();
  std::error_code error;
  AT_CHECK(fs::is_regular_file(path, error), "checkpoint ", where, " does not exist");
  AT_CHECK(H5Fis_hdf5(path.c_str()) > 0, "checkpoint ", where,
           " is not an HDF5 file (damaged, or not a checkpoint)");
  H5File file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  if (!file.valid()) {
    const std::string detail = hdf5_error_detail();
    H5Eclear2(H5E_DEFAULT);
    throw Error(
        cat("checkpoint ", where, " cannot be opened (truncated or corrupt file?): ", detail));
  }
  CheckpointInfo info;
  read_run_state(file.get(), info, where);
  std::vector<std::string> names;
  AT_H5_CHECK(
      H5Ovisit2(file.get(), H5_INDEX_NAME, H5_ITER_INC, collect_dataset, &names, H5O_INFO_BASIC),
      cat(where, ": listing datasets"));
  std::sort(names.begin(), names.end());
  for (const auto& name : names) info.datasets.push_back(describe_dataset(file.get(), name, where));
  if (info.layout == Layout::per_rank) {
    // A missing source of a virtual dataset reads as zeros; refuse it here instead.
    for (int rank = 0; rank < info.world_size; ++rank) {
      char name[32];
      std::snprintf(name, sizeof name, "rank-%05d.h5", rank);
      const fs::path source = rank_folder(path) / name;
      AT_CHECK(fs::is_regular_file(source, error), "checkpoint ", where, ": rank file ",
               source.string(),
               " is missing (the per-rank layout keeps one file per writing rank)");
    }
  }
  return info;
}

nlohmann::json to_json(const CheckpointInfo& info) {
  nlohmann::json datasets = nlohmann::json::array();
  for (const auto& d : info.datasets) {
    datasets.push_back(
        {{"name", d.name}, {"length", d.length}, {"shape", d.shape}, {"checksum", d.checksum}});
  }
  return {{"format", info.format},
          {"format_version", info.format_version},
          {"autotrain_version", info.autotrain_version},
          {"layout", layout_name(info.layout)},
          {"step", info.step},
          {"epoch", info.epoch},
          {"consumed_samples", info.consumed_samples},
          {"world_size", info.world_size},
          {"zero_stage", info.zero_stage},
          {"datasets", datasets},
          {"json", info.json},
          {"per_rank", info.per_rank},
          {"run_state_checksum",
           info.run_state_checksum ? nlohmann::json(*info.run_state_checksum) : nlohmann::json()}};
}

CheckpointInfo from_json(const nlohmann::json& json) {
  CheckpointInfo info;
  info.format = json["format"];
  info.format_version = json["format_version"];
  info.autotrain_version = json["autotrain_version"];
  info.layout = parse_layout(json["layout"].get<std::string>(), "checkpoint layout");
  info.step = json["step"];
  info.epoch = json["epoch"];
  info.consumed_samples = json["consumed_samples"];
  info.world_size = json["world_size"];
  info.zero_stage = json["zero_stage"];
  for (const auto& d : json["datasets"]) {
    info.datasets.push_back(
        {d["name"], d["length"], d["shape"].get<std::vector<uint64_t>>(), d["checksum"]});
  }
  info.json = json["json"].get<std::map<std::string, std::string>>();
  info.per_rank = json["per_rank"].get<std::map<std::string, std::vector<std::vector<uint64_t>>>>();
  if (!json["run_state_checksum"].is_null())
    info.run_state_checksum = json["run_state_checksum"].get<uint64_t>();
  return info;
}

// Rank 0 reads; everyone receives the description or the same CollectiveError.
CheckpointInfo broadcast_description(const fs::path& path, MPI_Comm comm) {
  int rank = 0;
  AT_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  std::string text;
  std::string failure;
  if (rank == 0) {
    try {
      text = to_json(read_description(path)).dump();
    } catch (const std::exception& error) {
      failure = error.what();
    }
  }
  agree_or_throw(failure.empty(), failure, comm);
  text = broadcast_string_or_abort(std::move(text), 0, comm,
                                   cat("the description of checkpoint ", path.string()));
  return from_json(nlohmann::json::parse(text));
}

}  // namespace

struct CheckpointReader::Impl {
  fs::path path;
  std::string where;
  MPI_Comm comm = MPI_COMM_WORLD;
  int rank = 0;
  int size = 1;
  CheckpointInfo info;
  H5File file;  // opened on the first read
  H5Plist transfer;
  std::map<std::string, H5Dataset, std::less<>> datasets;  // closed before `file`
  // Per dataset of info.datasets, over what read() delivered on this rank since the last
  // verify_reads(): the sum of the checksum terms, and the number of elements.
  std::vector<uint64_t> read_sums;
  std::vector<uint64_t> read_counts;
  uint64_t bytes_read = 0;

  void open_file() {
    if (file.valid()) return;
    H5Plist fapl(AT_H5_CHECK(H5Pcreate(H5P_FILE_ACCESS), where));
    transfer = H5Plist(AT_H5_CHECK(H5Pcreate(H5P_DATASET_XFER), where));
    if (info.layout == Layout::shared) {
      AT_H5_CHECK(H5Pset_fapl_mpio(fapl.get(), comm, MPI_INFO_NULL), where);
      AT_H5_CHECK(H5Pset_all_coll_metadata_ops(fapl.get(), true), where);
      AT_H5_CHECK(H5Pset_dxpl_mpio(transfer.get(), H5FD_MPIO_COLLECTIVE), where);
    }
    // Per-rank: each rank opens the master alone (sec2); virtual-dataset reads are
    // independent and open only the rank files they touch.
    // Collective in the shared layout: a rank that never opens it must not hang the others.
    const CollectiveDeadline deadline(cat("opening checkpoint ", where, " (H5Fopen)"));
    file = H5File(AT_H5_CHECK(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get()), where));
  }

  hid_t dataset(std::string_view name) {
    open_file();
    auto found = datasets.find(name);
    if (found != datasets.end()) return found->second.get();
    const std::string key(name);
    H5Dataset handle(
        AT_H5_CHECK(H5Dopen2(file.get(), key.c_str(), H5P_DEFAULT), cat(where, ": dataset ", key)));
    return datasets.emplace(key, std::move(handle)).first->second.get();
  }

  using RangePart = Part<ReadRange>;

  static std::vector<RangePart> parts_of(std::span<const ReadRange> ranges) {
    std::vector<RangePart> parts;
    for (const auto& range : ranges) append_parts(range, parts);
    return parts;
  }

  // Where a part is read to: the range's own memory, or `buffer` for a streamed one.
  static float* destination(const RangePart& part, std::vector<float>& buffer) {
    if (!part.whole->streamed()) return part.whole->out.data() + part.at;
    buffer.resize(std::max<std::size_t>(buffer.size(), part.count));
    return buffer.data();
  }

  // A part that arrived: its checksum terms added to `sum`, a streamed one handed on.
  static void deliver(const RangePart& part, const float* data, uint64_t& sum) {
    const std::span<const float> values(data, part.count);
    sum += checksum_piece(part.whole->offset + part.at, values);
    if (part.whole->streamed()) part.whole->stream.write(part.at, values);
  }

  // Reads `ranges` of `target`, adding their checksum terms to `sum`: collectively in the
  // shared layout (one part per rank per call, as many calls as the rank with the most parts),
  // independently through the virtual datasets in the per-rank layout.
  void read_ranges(const DatasetInfo& target, std::span<const ReadRange> ranges, uint64_t& sum) {
    for (const auto& range : ranges) {
      AT_CHECK(range.offset + range.size() <= target.length, "checkpoint ", where, ": read of [",
               range.offset, ", ", range.offset + range.size(), ") of '", target.name,
               "' lies past its length ", target.length);
      bytes_read += range.size() * sizeof(float);
    }
    const std::string object = cat(where, ": dataset ", target.name);
    hid_t handle = dataset(target.name);
    H5Space file_space(AT_H5_CHECK(H5Dget_space(handle), object));
    const std::vector<RangePart> parts = parts_of(ranges);
    std::vector<float> buffer;  // a streamed part
    if (info.layout == Layout::per_rank) {
      for (const RangePart& part : parts) {
        if (part.count == 0) continue;
        hsize_t dims[1] = {part.count};
        H5Space memory_space(AT_H5_CHECK(H5Screate_simple(1, dims, nullptr), object));
        h5::select_range(file_space.get(), part.whole->offset + part.at, dims[0], object);
        float* out = destination(part, buffer);
        AT_H5_CHECK(H5Dread(handle, H5T_NATIVE_FLOAT, memory_space.get(), file_space.get(),
                            transfer.get(), out),
                    object);
        deliver(part, out, sum);
      }
      return;
    }
    float sink = 0.0f;
    uint64_t rounds = parts.size();
    allreduce_or_abort(&rounds, 1, MPI_UINT64_T, MPI_MAX, comm, cat("reading ", object));
    const CollectiveDeadline deadline(cat("reading ", object, " (a collective H5Dread)"));
    for (uint64_t round = 0; round < rounds; ++round) {
      const RangePart* part = round < parts.size() ? &parts[round] : nullptr;
      const uint64_t count = part ? part->count : 0;
      h5::select_range(file_space.get(), part ? part->whole->offset + part->at : 0, count, object);
      hsize_t dims[1] = {std::max<uint64_t>(count, 1)};
      H5Space memory_space(AT_H5_CHECK(H5Screate_simple(1, dims, nullptr), object));
      h5::select_range(memory_space.get(), 0, count, object);
      float* out = count > 0 ? destination(*part, buffer) : &sink;
      AT_H5_CHECK(H5Dread(handle, H5T_NATIVE_FLOAT, memory_space.get(), file_space.get(),
                          transfer.get(), out),
                  object);
      if (count > 0) deliver(*part, out, sum);
    }
  }
};

CheckpointReader::CheckpointReader(const fs::path& path, MPI_Comm comm,
                                   std::span<const TensorSpec> expected)
    : impl_(std::make_unique<Impl>()) {
  silence_hdf5_errors();
  impl_->path = path;
  impl_->where = path.string();
  impl_->comm = comm;
  AT_MPI_CHECK(MPI_Comm_rank(comm, &impl_->rank));
  AT_MPI_CHECK(MPI_Comm_size(comm, &impl_->size));
  impl_->info = broadcast_description(path, comm);
  impl_->read_sums.assign(impl_->info.datasets.size(), 0);
  impl_->read_counts.assign(impl_->info.datasets.size(), 0);
  // Every rank holds the same description, so every rank reaches the same verdict.
  for (const auto& spec : expected) {
    const DatasetInfo* found = find(spec.name);
    if (found == nullptr) {
      throw CollectiveError(cat("checkpoint ", impl_->where, ": dataset '", spec.name,
                                "' is missing (this model expects it)"));
    }
    if (found->length != spec.length) {
      throw CollectiveError(cat("checkpoint ", impl_->where, ": dataset '", spec.name, "' has ",
                                found->length, " elements, expected ", spec.length,
                                " (a checkpoint of a different model configuration?)"));
    }
  }
}

CheckpointReader::~CheckpointReader() = default;

const CheckpointInfo& CheckpointReader::info() const {
  return impl_->info;
}
const fs::path& CheckpointReader::path() const {
  return impl_->path;
}

const DatasetInfo* CheckpointReader::find(std::string_view name) const {
  for (const auto& dataset : impl_->info.datasets) {
    if (dataset.name == name) return &dataset;
  }
  return nullptr;
}

void CheckpointReader::read(std::string_view name, std::span<const ReadRange> ranges) {
  const DatasetInfo* info = find(name);
  AT_CHECK(info != nullptr, "checkpoint ", impl_->where, ": no dataset '", name, "'");
  const auto d = static_cast<size_t>(info - impl_->info.datasets.data());
  impl_->read_ranges(*info, ranges, impl_->read_sums[d]);
  for (const auto& range : ranges) impl_->read_counts[d] += range.size();
}

void CheckpointReader::read(std::string_view name, uint64_t offset, std::span<float> out) {
  const ReadRange range{offset, out};
  read(name, std::span<const ReadRange>(&range, 1));
}

std::vector<std::string> CheckpointReader::verify_checksums() {
  // Rank r checks elements [length * r / size, length * (r + 1) / size) of every dataset,
  // through a bounded buffer, so verification needs neither the whole tensor nor its writer's
  // partition.
  constexpr uint64_t kChunk = uint64_t{1} << 22;  // 16 MiB of fp32
  const auto& datasets = impl_->info.datasets;
  std::vector<uint64_t> sums(datasets.size(), 0);
  std::vector<float> buffer;
  const auto rank = static_cast<uint64_t>(impl_->rank);
  const auto size = static_cast<uint64_t>(impl_->size);
  for (size_t d = 0; d < datasets.size(); ++d) {
    const uint64_t length = datasets[d].length;
    const uint64_t begin = length * rank / size;
    const uint64_t end = length * (rank + 1) / size;
    const uint64_t largest_share = (length + size - 1) / size;
    const uint64_t rounds = (largest_share + kChunk - 1) / kChunk;
    buffer.resize(std::min(kChunk, end - begin));
    for (uint64_t round = 0; round < rounds; ++round) {
      const uint64_t first = std::min(end, begin + round * kChunk);
      const uint64_t count = std::min(kChunk, end - first);
      const ReadRange range{first, std::span<float>(buffer.data(), count)};
      impl_->read_ranges(datasets[d], std::span<const ReadRange>(&range, 1), sums[d]);
    }
  }
  allreduce_or_abort(sums.data(), static_cast<int>(sums.size()), MPI_UINT64_T, MPI_SUM, impl_->comm,
                     cat("verifying checkpoint ", impl_->where));
  std::vector<std::string> problems = verify_run_state();
  for (size_t d = 0; d < datasets.size(); ++d) {
    if (sums[d] != datasets[d].checksum) {
      problems.push_back(cat(datasets[d].name, ": checksum mismatch (stored ", std::hex,
                             datasets[d].checksum, ", computed ", sums[d], ")"));
    }
  }
  return problems;
}

std::vector<std::string> CheckpointReader::verify_reads() {
  const auto& datasets = impl_->info.datasets;
  // One all-reduce of [sums..., counts...]: the sums wrap mod 2^64 like the checksum itself.
  std::vector<uint64_t> totals = impl_->read_sums;
  totals.insert(totals.end(), impl_->read_counts.begin(), impl_->read_counts.end());
  allreduce_or_abort(totals.data(), static_cast<int>(totals.size()), MPI_UINT64_T, MPI_SUM,
                     impl_->comm, cat("verifying checkpoint ", impl_->where));
  std::fill(impl_->read_sums.begin(), impl_->read_sums.end(), 0);
  std::fill(impl_->read_counts.begin(), impl_->read_counts.end(), 0);
  std::vector<std::string> problems;
  for (size_t d = 0; d < datasets.size(); ++d) {
    const uint64_t sum = totals[d];
    const uint64_t count = totals[datasets.size() + d];
    if (count == 0) continue;  // not read: nothing to check
    if (count != datasets[d].length) {
      problems.push_back(cat(datasets[d].name, ": the ranks read ", count, " elements of ",
                             datasets[d].length,
                             ", so its checksum cannot be checked from what "
                             "they read (each element must be read exactly once)"));
    } else if (sum != datasets[d].checksum) {
      problems.push_back(cat(datasets[d].name, ": checksum mismatch (stored ", std::hex,
                             datasets[d].checksum, ", computed ", sum, std::dec,
                             ") in the ranges read by ", impl_->size, " rank(s)"));
    }
  }
  return problems;
}

std::vector<std::string> CheckpointReader::verify_run_state() const {
  const CheckpointInfo& info = impl_->info;
  if (!info.run_state_checksum || run_state_checksum(info) == *info.run_state_checksum) return {};
  return {cat("run_state: checksum mismatch (stored ", std::hex, *info.run_state_checksum,
              ", computed ", run_state_checksum(info), std::dec,
              "): the step, data position or another part of the run state was altered")};
}

uint64_t CheckpointReader::bytes_read() const {
  return impl_->bytes_read;
}

}  // namespace autotrain::ckpt
