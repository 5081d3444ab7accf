// Writing a checkpoint: the `shared` layout (one file, parallel HDF5, collective transfers) and
// the `per-rank` layout (one sec2 file per rank plus a master file of virtual datasets), both
// committed by fsync + rename, after the ranks agreed on what to write (write_plan.hpp) and
// reserved its room on disk (disk_space.hpp).
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>

#include "autotrain/ckpt/checkpoint.hpp"
#include "autotrain/ckpt/checksum.hpp"
#include "autotrain/core/deadline.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/log.hpp"
#include "autotrain/core/mpi.hpp"
#include "autotrain/core/paths.hpp"
#include "autotrain/core/strings.hpp"
#include "disk_space.hpp"
#include "h5_io.hpp"
#include "parts.hpp"
#include "run_state_io.hpp"
#include "write_plan.hpp"

namespace autotrain::ckpt {
namespace fs = std::filesystem;

std::string_view layout_name(Layout layout) {
  return layout == Layout::shared ? "shared" : "per-rank";
}

Layout parse_layout(std::string_view text, std::string_view what) {
  if (text == "shared") return Layout::shared;
  if (text == "per-rank" || text == "per_rank") return Layout::per_rank;
  throw Error(cat(what, ": unknown checkpoint layout '", text, "' (expected shared or per-rank)",
                  did_you_mean(text, {"shared", "per-rank"})));
}

fs::path rank_folder(const fs::path& path) {
  fs::path folder = path;
  return folder.replace_extension(".ranks");
}

namespace {

using PiecePart = Part<Piece>;

// The part's elements: the piece's own memory, or read from its stream into `buffer`; their
// checksum terms are added to `sums`.
std::span<const float> part_data(const PiecePart& part, std::vector<float>& buffer,
                                 std::vector<uint64_t>& sums) {
  const Piece& piece = *part.whole;
  std::span<const float> data;
  if (piece.streamed()) {
    buffer.resize(std::max<std::size_t>(buffer.size(), part.count));
    const std::span<float> out(buffer.data(), part.count);
    piece.stream.read(part.at, out);
    data = out;
  } else {
    data = piece.data.subspan(part.at, part.count);
  }
  sums[piece.tensor] += checksum_piece(piece.offset + part.at, data);
  return data;
}

// Per-tensor checksums of the whole logical tensors: the sum of every rank's terms, added up as
// the parts were written.
std::vector<uint64_t> tensor_checksums(std::vector<uint64_t> sums, MPI_Comm comm) {
  AT_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, sums.data(), static_cast<int>(sums.size()), MPI_UINT64_T,
                             MPI_SUM, comm));
  return sums;
}

// This rank's parts in (tensor, offset) order: the order they are laid out in a rank file.
std::vector<PiecePart> sorted_local_parts(const CheckpointContent& content) {
  std::vector<const Piece*> pieces;
  for (const auto& piece : content.pieces) {
    if (piece.size() > 0) pieces.push_back(&piece);
  }
  std::sort(pieces.begin(), pieces.end(), [](const Piece* a, const Piece* b) {
    return std::tie(a->tensor, a->offset) < std::tie(b->tensor, b->offset);
  });
  std::vector<PiecePart> parts;
  for (const Piece* piece : pieces) append_parts(*piece, parts);
  return parts;
}

H5Plist tensor_dcpl(const std::string& where) {
  H5Plist dcpl(AT_H5_CHECK(H5Pcreate(H5P_DATASET_CREATE), where));
  AT_H5_CHECK(H5Pset_layout(dcpl.get(), H5D_CONTIGUOUS), where);
  // Every element is written by exactly one rank, so a fill pass would only double the I/O.
  AT_H5_CHECK(H5Pset_fill_time(dcpl.get(), H5D_FILL_TIME_NEVER), where);
  // Parallel HDF5 needs the space allocated at creation, when all ranks agree on the layout.
  AT_H5_CHECK(H5Pset_alloc_time(dcpl.get(), H5D_ALLOC_TIME_EARLY), where);
  return dcpl;
}

H5Dataset create_dataset(hid_t file, const std::string& name, uint64_t length, hid_t dcpl,
                         hid_t lcpl, const std::string& where) {
  hsize_t dims[1] = {length};
  H5Space space(AT_H5_CHECK(H5Screate_simple(1, dims, nullptr), where));
  return H5Dataset(AT_H5_CHECK(
      H5Dcreate2(file, name.c_str(), H5T_IEEE_F32LE, space.get(), lcpl, dcpl, H5P_DEFAULT),
      cat(where, ": dataset ", name)));
}

void write_tensor_attributes(hid_t dataset, const TensorSpec& spec, uint64_t checksum,
                             const std::string& where) {
  h5::write_attribute(dataset, "shape", spec.shape, where);
  h5::write_attribute(dataset, "checksum", std::vector<uint64_t>{checksum}, where);
}

H5Plist file_access(const WriteOptions& options, MPI_Comm comm, bool parallel,
                    const std::string& where) {
  H5Plist fapl(AT_H5_CHECK(H5Pcreate(H5P_FILE_ACCESS), where));
  if (parallel) {
    AT_H5_CHECK(H5Pset_fapl_mpio(fapl.get(), comm, MPI_INFO_NULL), where);
    // Rank 0 reads metadata and broadcasts it; metadata is written collectively at close.
    AT_H5_CHECK(H5Pset_all_coll_metadata_ops(fapl.get(), true), where);
    AT_H5_CHECK(H5Pset_coll_metadata_write(fapl.get(), true), where);
  }
  AT_H5_CHECK(H5Pset_alignment(fapl.get(), options.alignment_threshold, options.alignment), where);
  return fapl;
}

// Runs `step` on every rank and turns a failure on any rank into the same CollectiveError on
// all, so that no rank is left waiting in the next collective.
// The step may itself be collective (an HDF5 call on a parallel file), so it runs under the
// collective deadline too: a rank stopped inside it cannot hang the others.
template <typename Step>
void on_all_ranks(MPI_Comm comm, Step&& step) {
  std::string failure;
  try {
    const CollectiveDeadline deadline("checkpoint write (a collective HDF5 call)");
    step();
  } catch (const std::exception& error) {
    failure = error.what();
  }
  agree_or_throw(failure.empty(), failure, comm, "a checkpoint write");
}

// A collective HDF5 call (a transfer, a flush, the close) that fails on some ranks only leaves
// the others inside it, where no agreement reaches them (MPI-IO waits for every rank). So the
// failing rank says why at once, removes the unfinished file and ends the job: the others never
// wait out comm_timeout, and the last committed checkpoint stays.
template <typename Step>
void collective_call(const fs::path& unfinished, Step&& step) {
  errno = 0;  // HDF5 keeps no errno in its message: the system's reason is read from here
  try {
    const CollectiveDeadline deadline("checkpoint write (a collective HDF5 call)");
    step();
  } catch (const std::exception& error) {
    const int reason = errno;
    std::error_code ignored;
    fs::remove(unfinished, ignored);
    log::error("checkpoint write failed: ", error.what(),
               reason == 0 ? std::string() : cat(": ", std::strerror(reason)), "; the unfinished ",
               unfinished.string(),
               " is removed and the checkpoints saved before are kept; ending the job, as the "
               "other ranks may be waiting inside the same collective write");
    abort_job(1);
  }
}

void write_shared(const fs::path& tmp, const CheckpointContent& content,
                  const std::vector<PieceRecord>& records, const RunStateRecord& state,
                  const WriteOptions& options, MPI_Comm comm) {
  const std::string where = tmp.string();
  const int rank = comm_rank(comm);
  H5Plist fapl = file_access(options, comm, true, where);
  H5File file(AT_H5_CHECK(H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()), where));
  on_all_ranks(comm, [&] {
    if (rank != 0) return;
    std::vector<uint64_t> lengths;
    for (const auto& spec : content.tensors) lengths.push_back(spec.length);
    reserve_space(tmp, file_bytes_bound(lengths, options));
  });
  write_root_attributes(file.get(), state, Layout::shared, where);
  H5Plist lcpl = h5::link_create_plist(where);
  H5Plist dcpl = tensor_dcpl(where);
  H5Plist dxpl(AT_H5_CHECK(H5Pcreate(H5P_DATASET_XFER), where));
  AT_H5_CHECK(H5Pset_dxpl_mpio(dxpl.get(), H5FD_MPIO_COLLECTIVE), where);

  // Parts owned per (tensor, rank): a collective write moves one part per rank, so a tensor
  // needs as many writes as the busiest rank has parts of it (ranks with fewer select none).
  std::vector<uint64_t> rounds(content.tensors.size(), 0);
  {
    std::vector<std::vector<uint64_t>> per_rank(
        content.tensors.size(), std::vector<uint64_t>(static_cast<size_t>(comm_size(comm)), 0));
    for (const auto& record : records) per_rank[record.tensor][record.rank] += record.parts;
    for (size_t t = 0; t < rounds.size(); ++t) {
      rounds[t] = *std::max_element(per_rank[t].begin(), per_rank[t].end());
    }
  }
  const std::vector<PiecePart> local = sorted_local_parts(content);
  size_t next = 0;
  std::vector<float> buffer;  // a streamed part
  std::vector<uint64_t> sums(content.tensors.size(), 0);
  std::vector<H5Dataset> datasets;
  datasets.reserve(content.tensors.size());
  const float dummy = 0.0f;  // H5Dwrite wants a buffer even for an empty selection
  for (size_t t = 0; t < content.tensors.size(); ++t) {
    const TensorSpec& spec = content.tensors[t];
    const std::string object = cat(where, ": dataset ", spec.name);
    H5Dataset& dataset = datasets.emplace_back(
        create_dataset(file.get(), spec.name, spec.length, dcpl.get(), lcpl.get(), where));
    H5Space file_space(AT_H5_CHECK(H5Dget_space(dataset.get()), object));
    for (uint64_t round = 0; round < rounds[t]; ++round) {
      const PiecePart* part =
          next < local.size() && local[next].whole->tensor == t ? &local[next++] : nullptr;
      const uint64_t count = part ? part->count : 0;
      h5::select_range(file_space.get(), part ? part->whole->offset + part->at : 0, count, object);
      hsize_t memory_dims[1] = {std::max<uint64_t>(count, 1)};
      H5Space memory_space(AT_H5_CHECK(H5Screate_simple(1, memory_dims, nullptr), object));
      h5::select_range(memory_space.get(), 0, count, object);
      // A write can fail on one rank only (its file is too large for its limits): that rank
      // ends the job at once rather than leave the others in the next collective call.
      // So does a streamed part that cannot be read.
      collective_call(tmp, [&] {
        const float* data = part ? part_data(*part, buffer, sums).data() : &dummy;
        AT_H5_CHECK(H5Dwrite(dataset.get(), H5T_NATIVE_FLOAT, memory_space.get(), file_space.get(),
                             dxpl.get(), data),
                    object);
      });
    }
  }
  // The checksums are known once every part went by (a streamed one is read only once).
  const std::vector<uint64_t> checksums = tensor_checksums(std::move(sums), comm);
  for (size_t t = 0; t < content.tensors.size(); ++t) {
    write_tensor_attributes(datasets[t].get(), content.tensors[t], checksums[t],
                            cat(where, ": dataset ", content.tensors[t].name));
  }
  datasets.clear();
  collective_call(
      tmp, [&] { write_run_state(file.get(), state, lcpl.get(), dxpl.get(), rank == 0, where); });
  // With the MPI-IO driver a flush is an MPI_File_sync on every rank.
  collective_call(tmp, [&] { AT_H5_CHECK(H5Fflush(file.get(), H5F_SCOPE_GLOBAL), where); });
  collective_call(tmp, [&] { AT_H5_CHECK(file.close(), where); });
}

fs::path rank_file_name(int rank) {
  char name[32];
  std::snprintf(name, sizeof name, "rank-%05d.h5", rank);
  return name;
}

// Each rank's file: one dataset per tensor it holds pieces of, the pieces back to back in
// offset order (so piece k of tensor t starts at the sum of the earlier pieces' counts).
// Returns this rank's checksum terms per tensor.
std::vector<uint64_t> write_rank_file(const fs::path& file_path, const CheckpointContent& content,
                                      const WriteOptions& options) {
  const std::string where = file_path.string();
  H5Plist fapl = file_access(options, MPI_COMM_SELF, false, where);
  H5File file(
      AT_H5_CHECK(H5Fcreate(file_path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()), where));
  H5Plist lcpl = h5::link_create_plist(where);
  H5Plist dcpl = tensor_dcpl(where);
  const std::vector<PiecePart> local = sorted_local_parts(content);
  std::vector<uint64_t> lengths;  // per tensor: its pieces back to back, one dataset
  for (size_t k = 0; k < local.size(); ++k) {
    if (k == 0 || local[k].whole->tensor != local[k - 1].whole->tensor) lengths.push_back(0);
    lengths.back() += local[k].count;
  }
  reserve_space(file_path, file_bytes_bound(lengths, options));
  std::vector<float> buffer;  // a streamed part
  std::vector<uint64_t> sums(content.tensors.size(), 0);
  for (size_t begin = 0; begin < local.size();) {
    size_t end = begin;
    uint64_t total = 0;
    while (end < local.size() && local[end].whole->tensor == local[begin].whole->tensor)
      total += local[end++].count;
    const TensorSpec& spec = content.tensors[local[begin].whole->tensor];
    const std::string object = cat(where, ": dataset ", spec.name);
    H5Dataset dataset = create_dataset(file.get(), spec.name, total, dcpl.get(), lcpl.get(), where);
    H5Space file_space(AT_H5_CHECK(H5Dget_space(dataset.get()), object));
    uint64_t position = 0;
    for (size_t k = begin; k < end; ++k) {
      const std::span<const float> data = part_data(local[k], buffer, sums);
      hsize_t dims[1] = {data.size()};
      H5Space memory_space(AT_H5_CHECK(H5Screate_simple(1, dims, nullptr), object));
      h5::select_range(file_space.get(), position, dims[0], object);
      AT_H5_CHECK(H5Dwrite(dataset.get(), H5T_NATIVE_FLOAT, memory_space.get(), file_space.get(),
                           H5P_DEFAULT, data.data()),
                  object);
      position += dims[0];
    }
    begin = end;
  }
  AT_H5_CHECK(file.close(), where);
  h5::fsync_path(file_path);
  return sums;
}

// Rank 0's master file: the same logical datasets as the shared layout, each a virtual dataset
// whose mappings point into the rank files (paths relative to the master's folder).
void write_master_file(const fs::path& tmp, const fs::path& final_path,
                       const std::vector<TensorSpec>& tensors, std::vector<PieceRecord> records,
                       const std::vector<uint64_t>& checksums, const RunStateRecord& state,
                       const WriteOptions& options) {
  const std::string where = tmp.string();
  H5Plist fapl = file_access(options, MPI_COMM_SELF, false, where);
  H5File file(AT_H5_CHECK(H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()), where));
  write_root_attributes(file.get(), state, Layout::per_rank, where);
  H5Plist lcpl = h5::link_create_plist(where);
  std::sort(records.begin(), records.end(), [](const PieceRecord& a, const PieceRecord& b) {
    return std::tie(a.tensor, a.rank, a.offset) < std::tie(b.tensor, b.rank, b.offset);
  });
  const fs::path folder = rank_folder(final_path).filename();
  size_t next = 0;
  for (size_t t = 0; t < tensors.size(); ++t) {
    const TensorSpec& spec = tensors[t];
    const std::string object = cat(where, ": dataset ", spec.name);
    H5Plist dcpl(AT_H5_CHECK(H5Pcreate(H5P_DATASET_CREATE), object));
    hsize_t dims[1] = {spec.length};
    H5Space virtual_space(AT_H5_CHECK(H5Screate_simple(1, dims, nullptr), object));
    uint64_t position = 0;
    uint64_t previous_rank = UINT64_MAX;
    for (; next < records.size() && records[next].tensor == t; ++next) {
      const PieceRecord& record = records[next];
      if (record.count == 0) continue;
      if (record.rank != previous_rank) position = 0;
      previous_rank = record.rank;
      // Only the selection [position, position + count) of the source matters; its extent
      // just has to contain it.
      hsize_t source_dims[1] = {position + record.count};
      H5Space source_space(AT_H5_CHECK(H5Screate_simple(1, source_dims, nullptr), object));
      h5::select_range(source_space.get(), position, record.count, object);
      h5::select_range(virtual_space.get(), record.offset, record.count, object);
      const std::string source_file =
          (folder / rank_file_name(static_cast<int>(record.rank))).string();
      AT_H5_CHECK(H5Pset_virtual(dcpl.get(), virtual_space.get(), source_file.c_str(),
                                 spec.name.c_str(), source_space.get()),
                  object);
      position += record.count;
    }
    H5Space space(AT_H5_CHECK(H5Screate_simple(1, dims, nullptr), object));
    H5Dataset dataset(AT_H5_CHECK(H5Dcreate2(file.get(), spec.name.c_str(), H5T_IEEE_F32LE,
                                             space.get(), lcpl.get(), dcpl.get(), H5P_DEFAULT),
                                  object));
    write_tensor_attributes(dataset.get(), spec, checksums[t], object);
  }
  write_run_state(file.get(), state, lcpl.get(), H5P_DEFAULT, true, where);
  AT_H5_CHECK(file.close(), where);
  h5::fsync_path(tmp);
}

void commit_rename(const fs::path& from, const fs::path& to) {
  std::error_code error;
  fs::rename(from, to, error);
  AT_CHECK(!error, "cannot rename ", from.string(), " to ", to.string(), ": ", error.message());
  h5::fsync_path(to.parent_path().empty() ? fs::path(".") : to.parent_path());
}

// The per-rank layout: every rank's file in the rank folder, then rank 0's master file.
void write_per_rank(const fs::path& path, const fs::path& tmp, const fs::path& folder_tmp,
                    const CheckpointContent& content, const std::vector<PieceRecord>& records,
                    const RunStateRecord& state, const WriteOptions& options, MPI_Comm comm) {
  const int rank = comm_rank(comm);
  on_all_ranks(comm, [&] {
    if (rank == 0) {
      fs::remove_all(folder_tmp);
      fs::create_directories(folder_tmp);
    }
  });
  std::vector<uint64_t> sums;
  on_all_ranks(
      comm, [&] { sums = write_rank_file(folder_tmp / rank_file_name(rank), content, options); });
  const std::vector<uint64_t> checksums = tensor_checksums(std::move(sums), comm);
  on_all_ranks(comm, [&] {
    if (rank != 0) return;
    // The rank folder is renamed first; the master's rename is the commit point. A rank folder
    // without its master is an unfinished save and is never listed as a checkpoint.
    h5::fsync_path(folder_tmp);
    fs::remove_all(rank_folder(path));
    commit_rename(folder_tmp, rank_folder(path));
    write_master_file(tmp, path, content.tensors, records, checksums, state, options);
    commit_rename(tmp, path);
  });
}

}  // namespace

void write_checkpoint(const fs::path& path, const CheckpointContent& content,
                      const WriteOptions& options, MPI_Comm comm) {
  silence_hdf5_errors();
  const int rank = comm_rank(comm);
  on_all_ranks(comm, [&] { check_specs(content.tensors); });
  std::optional<CollectiveDeadline> deadline("checkpoint write (agreeing on the tensors)");
  uint64_t fingerprint[2] = {spec_fingerprint(content.tensors), ~spec_fingerprint(content.tensors)};
  AT_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, fingerprint, 2, MPI_UINT64_T, MPI_MAX, comm));
  agree_or_throw(fingerprint[0] == ~fingerprint[1],
                 cat("ranks disagree on the list of checkpoint tensors for ", path.string(),
                     " (names, lengths or shapes differ)"),
                 comm);
  std::vector<PieceRecord> records = gather_pieces(content, comm);
  check_ownership(content.tensors, records);
  const RunStateRecord state = gather_run_state(content.state, comm);
  deadline.reset();

  const fs::path tmp = fs::path(path.string() + ".tmp");
  stop_here_if_asked("save");
  on_all_ranks(comm, [&] {
    if (rank == 0) {
      fs::create_directories(path.parent_path().empty() ? fs::path(".") : path.parent_path());
      fs::remove(tmp);
    }
  });
  if (options.layout == Layout::shared) {
    // Each collective HDF5 call's outcome is agreed on (write_shared), so a failure on one rank
    // ends the save on all; the unfinished file is removed and the last checkpoint stays.
    try {
      write_shared(tmp, content, records, state, options, comm);
    } catch (const CollectiveError&) {
      if (rank == 0) {
        std::error_code ignored;
        fs::remove(tmp, ignored);
      }
      throw;
    }
    on_all_ranks(comm, [&] {
      if (rank == 0) {
        h5::fsync_path(tmp);
        commit_rename(tmp, path);
      }
    });
    return;
  }
  const fs::path folder_tmp = fs::path(rank_folder(path).string() + ".tmp");
  try {
    write_per_rank(path, tmp, folder_tmp, content, records, state, options, comm);
  } catch (const CollectiveError&) {
    if (rank == 0) {  // an unfinished save: nothing of it stays
      std::error_code ignored;
      fs::remove_all(folder_tmp, ignored);
      fs::remove(tmp, ignored);
    }
    throw;
  }
}

}  // namespace autotrain::ckpt
