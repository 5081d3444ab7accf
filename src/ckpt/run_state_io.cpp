#include "run_state_io.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "autotrain/core/deadline.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/mpi.hpp"
#include "autotrain/core/paths.hpp"
#include "h5_io.hpp"

namespace autotrain::ckpt {
namespace {

std::string broadcast_string(std::string text, MPI_Comm comm) {
  return broadcast_string_or_abort(std::move(text), 0, comm, "the checkpoint's run state");
}

}  // namespace

uint64_t run_state_checksum(int64_t step, int64_t epoch, int64_t consumed_samples, int world_size,
                            int zero_stage, const std::map<std::string, std::string>& json,
                            const std::map<std::string, std::vector<std::vector<uint64_t>>>& rows) {
  uint64_t hash = 0xcbf29ce484222325ull;  // FNV-1a over every field, lengths included
  const auto mix = [&hash](const void* data, size_t size) {
    const auto* bytes = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < size; ++i) hash = (hash ^ bytes[i]) * 0x100000001b3ull;
  };
  const auto mix_value = [&](uint64_t value) { mix(&value, sizeof value); };
  const auto mix_text = [&](const std::string& text) {
    mix_value(text.size());
    mix(text.data(), text.size());
  };
  for (const int64_t value :
       {step, epoch, consumed_samples, int64_t{world_size}, int64_t{zero_stage}}) {
    mix_value(static_cast<uint64_t>(value));
  }
  for (const auto& [name, text] : json) {
    mix_text(name);
    mix_text(text);
  }
  for (const auto& [name, table] : rows) {
    mix_text(name);
    mix_value(table.size());
    for (const auto& row : table) {
      mix_value(row.size());
      for (const uint64_t value : row) mix_value(value);
    }
  }
  return hash;
}

uint64_t run_state_checksum(const CheckpointInfo& info) {
  return run_state_checksum(info.step, info.epoch, info.consumed_samples, info.world_size,
                            info.zero_stage, info.json, info.per_rank);
}

RunStateRecord gather_run_state(const RunState& state, MPI_Comm comm) {
  int rank = 0;
  int size = 1;
  AT_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  AT_MPI_CHECK(MPI_Comm_size(comm, &size));
  nlohmann::json scalars = {{"step", state.step},
                            {"epoch", state.epoch},
                            {"consumed_samples", state.consumed_samples},
                            {"zero_stage", state.zero_stage},
                            {"json", state.json}};
  nlohmann::json agreed = nlohmann::json::parse(broadcast_string(scalars.dump(), comm));
  RunStateRecord record;
  record.world_size = size;
  record.scalars.step = agreed["step"];
  record.scalars.epoch = agreed["epoch"];
  record.scalars.consumed_samples = agreed["consumed_samples"];
  record.scalars.zero_stage = agreed["zero_stage"];
  record.scalars.json = agreed["json"].get<std::map<std::string, std::string>>();

  // Per-rank rows: same names and row lengths everywhere, then an all-gather per name.
  nlohmann::json shape = nlohmann::json::object();
  for (const auto& [name, row] : state.per_rank) shape[name] = row.size();
  const std::string mine = shape.dump();
  const std::string rank0 = broadcast_string(mine, comm);
  agree_or_throw(mine == rank0,
                 cat("per-rank checkpoint state differs from rank 0's: this rank has ", mine,
                     ", rank 0 has ", rank0, " (names and row lengths must match)"),
                 comm);
  for (const auto& [name, row] : state.per_rank) {
    std::vector<uint64_t> all(row.size() * static_cast<size_t>(size));
    allgather_or_abort(row.data(), static_cast<int>(row.size()), MPI_UINT64_T, all.data(), comm,
                       cat("the checkpoint's per-rank state ", name));
    auto& rows = record.per_rank[name];
    for (int r = 0; r < size; ++r) {
      rows.emplace_back(all.begin() + static_cast<ptrdiff_t>(row.size()) * r,
                        all.begin() + static_cast<ptrdiff_t>(row.size()) * (r + 1));
    }
  }
  return record;
}

void write_root_attributes(hid_t file, const RunStateRecord& state, Layout layout,
                           const std::string& where) {
  h5::write_attribute(file, "format", std::string(kFormatName), where);
  h5::write_attribute(file, "format_version", int64_t{kFormatVersion}, where);
  h5::write_attribute(file, "autotrain_version", version(), where);
  h5::write_attribute(file, "layout", std::string(layout_name(layout)), where);
  h5::write_attribute(file, "checksum_algorithm", std::string(kChecksumAlgorithm), where);
  h5::write_attribute(file, "step", state.scalars.step, where);
  h5::write_attribute(file, "epoch", state.scalars.epoch, where);
  h5::write_attribute(file, "consumed_samples", state.scalars.consumed_samples, where);
  h5::write_attribute(file, "world_size", int64_t{state.world_size}, where);
  h5::write_attribute(file, "zero_stage", int64_t{state.scalars.zero_stage}, where);
  h5::write_attribute(
      file, "run_state_checksum",
      std::vector<uint64_t>{run_state_checksum(
          state.scalars.step, state.scalars.epoch, state.scalars.consumed_samples, state.world_size,
          state.scalars.zero_stage, state.scalars.json, state.per_rank)},
      where);
}

namespace {

const float kNoData = 0.0f;  // H5Dwrite wants a buffer even for an empty selection

void write_small_dataset(hid_t file, const std::string& name, hid_t file_type, hid_t memory_type,
                         hid_t space, const void* data, hid_t lcpl, hid_t dxpl, bool writes_data,
                         const std::string& where) {
  const std::string object = cat(where, ": dataset ", name);
  H5Dataset dataset(AT_H5_CHECK(
      H5Dcreate2(file, name.c_str(), file_type, space, lcpl, H5P_DEFAULT, H5P_DEFAULT), object));
  if (!writes_data) AT_H5_CHECK(H5Sselect_none(space), object);
  AT_H5_CHECK(
      H5Dwrite(dataset.get(), memory_type, space, space, dxpl, writes_data ? data : &kNoData),
      object);
}

}  // namespace

void write_run_state(hid_t file, const RunStateRecord& state, hid_t lcpl, hid_t dxpl,
                     bool writes_data, const std::string& where) {
  for (const auto& document : state.scalars.json) {
    // Named copies: AT_H5_CHECK's lambda cannot capture a structured binding in clang 14.
    const std::string& name = document.first;
    const std::string& text = document.second;
    H5Type type(AT_H5_CHECK(H5Tcopy(H5T_C_S1), where));
    AT_H5_CHECK(H5Tset_size(type.get(), std::max<size_t>(text.size(), 1)), where);
    AT_H5_CHECK(H5Tset_strpad(type.get(), H5T_STR_NULLPAD), where);
    H5Space space(AT_H5_CHECK(H5Screate(H5S_SCALAR), where));
    const std::string padded = text.empty() ? std::string(1, '\0') : text;
    write_small_dataset(file, "run_state/json/" + name, type.get(), type.get(), space.get(),
                        padded.data(), lcpl, dxpl, writes_data, where);
  }
  for (const auto& [name, rows] : state.per_rank) {
    const size_t width = rows.empty() ? 0 : rows.front().size();
    hsize_t dims[2] = {rows.size(), width};
    std::vector<uint64_t> flat;
    for (const auto& row : rows) flat.insert(flat.end(), row.begin(), row.end());
    H5Space space(AT_H5_CHECK(H5Screate_simple(2, dims, nullptr), where));
    write_small_dataset(file, "run_state/per_rank/" + name, H5T_STD_U64LE, H5T_NATIVE_UINT64,
                        space.get(),
                        flat.empty() ? &kNoData : static_cast<const void*>(flat.data()), lcpl, dxpl,
                        writes_data && !flat.empty(), where);
  }
}

namespace {

std::vector<std::string> group_members(hid_t file, const std::string& group,
                                       const std::string& where) {
  std::vector<std::string> names;
  if (H5Lexists(file, "run_state", H5P_DEFAULT) <= 0 ||
      H5Lexists(file, group.c_str(), H5P_DEFAULT) <= 0) {
    return names;
  }
  H5Group handle(AT_H5_CHECK(H5Gopen2(file, group.c_str(), H5P_DEFAULT), cat(where, ": ", group)));
  H5G_info_t info{};
  AT_H5_CHECK(H5Gget_info(handle.get(), &info), cat(where, ": ", group));
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    ssize_t length = AT_H5_CHECK(H5Lget_name_by_idx(handle.get(), ".", H5_INDEX_NAME, H5_ITER_INC,
                                                    i, nullptr, 0, H5P_DEFAULT),
                                 cat(where, ": ", group));
    std::string name(static_cast<size_t>(length) + 1, '\0');
    H5Lget_name_by_idx(handle.get(), ".", H5_INDEX_NAME, H5_ITER_INC, i, name.data(), name.size(),
                       H5P_DEFAULT);
    name.resize(static_cast<size_t>(length));
    names.push_back(name);
  }
  return names;
}

}  // namespace

void read_run_state(hid_t file, CheckpointInfo& info, const std::string& where) {
  info.format = h5::read_string_attribute(file, "format", where);
  AT_CHECK(info.format == kFormatName, where,
           ": not an autotrain checkpoint (format attribute is '", info.format, "', expected '",
           kFormatName, "')");
  info.format_version = static_cast<int>(h5::read_int_attribute(file, "format_version", where));
  AT_CHECK(info.format_version <= kFormatVersion, where,
           ": written by a newer autotrain (format version ", info.format_version,
           "; this build reads up to version ", kFormatVersion, "): upgrade autotrain to load it");
  AT_CHECK(info.format_version >= 1, where, ": invalid format version ", info.format_version);
  info.autotrain_version = h5::read_string_attribute(file, "autotrain_version", where);
  info.layout = parse_layout(h5::read_string_attribute(file, "layout", where),
                             cat(where, ": attribute layout"));
  const std::string algorithm = h5::read_string_attribute(file, "checksum_algorithm", where);
  AT_CHECK(algorithm == kChecksumAlgorithm, where, ": unknown checksum algorithm '", algorithm,
           "'");
  info.step = h5::read_int_attribute(file, "step", where);
  info.epoch = h5::read_int_attribute(file, "epoch", where);
  info.consumed_samples = h5::read_int_attribute(file, "consumed_samples", where);
  info.world_size = static_cast<int>(h5::read_int_attribute(file, "world_size", where));
  info.zero_stage = static_cast<int>(h5::read_int_attribute(file, "zero_stage", where));
  if (H5Aexists(file, "run_state_checksum") > 0) {  // absent in checkpoints of 0.1.0 and earlier
    const auto stored = h5::read_uint_array_attribute(file, "run_state_checksum", where);
    AT_CHECK(stored.size() == 1, where, ": attribute 'run_state_checksum' should hold one value");
    info.run_state_checksum = stored[0];
  }

  for (const auto& name : group_members(file, "run_state/json", where)) {
    const std::string path = "run_state/json/" + name;
    const std::string object = cat(where, ": dataset ", path);
    H5Dataset dataset(AT_H5_CHECK(H5Dopen2(file, path.c_str(), H5P_DEFAULT), object));
    H5Type type(AT_H5_CHECK(H5Dget_type(dataset.get()), object));
    AT_CHECK(H5Tget_class(type.get()) == H5T_STRING && H5Tis_variable_str(type.get()) == 0, object,
             ": should be a fixed-length string");
    std::string text(H5Tget_size(type.get()), '\0');
    AT_H5_CHECK(H5Dread(dataset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, text.data()),
                object);
    text.resize(std::find(text.begin(), text.end(), '\0') - text.begin());
    info.json[name] = text;
  }
  for (const auto& name : group_members(file, "run_state/per_rank", where)) {
    const std::string path = "run_state/per_rank/" + name;
    const std::string object = cat(where, ": dataset ", path);
    H5Dataset dataset(AT_H5_CHECK(H5Dopen2(file, path.c_str(), H5P_DEFAULT), object));
    H5Space space(AT_H5_CHECK(H5Dget_space(dataset.get()), object));
    hsize_t dims[2] = {0, 0};
    AT_CHECK(H5Sget_simple_extent_ndims(space.get()) == 2, object,
             ": should be 2-D [world_size, K]");
    H5Sget_simple_extent_dims(space.get(), dims, nullptr);
    std::vector<uint64_t> flat(dims[0] * dims[1]);
    if (!flat.empty()) {
      AT_H5_CHECK(
          H5Dread(dataset.get(), H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, flat.data()),
          object);
    }
    auto& rows = info.per_rank[name];
    for (hsize_t r = 0; r < dims[0]; ++r) {
      rows.emplace_back(flat.begin() + static_cast<ptrdiff_t>(r * dims[1]),
                        flat.begin() + static_cast<ptrdiff_t>((r + 1) * dims[1]));
    }
  }
}

}  // namespace autotrain::ckpt
