#pragma once
// Private: the run state as written (rank 0's scalars and JSON, every rank's per-rank rows) and
// its HDF5 form: root attributes, /run_state/json/<name>, /run_state/per_rank/<name>.
#include <mpi.h>

#include <map>
#include <string>
#include <vector>

#include "autotrain/ckpt/checkpoint.hpp"
#include "autotrain/ckpt/hdf5.hpp"

namespace autotrain::ckpt {

struct RunStateRecord {
  RunState scalars;  // step, epoch, consumed_samples, zero_stage, json (per_rank unused)
  int world_size = 1;
  std::map<std::string, std::vector<std::vector<uint64_t>>> per_rank;  // name -> [world][K]
};

// Collective: rank 0's scalars and JSON for everyone; every rank's rows for everyone. Throws a
// CollectiveError when ranks disagree on the per-rank names or row lengths.
RunStateRecord gather_run_state(const RunState& state, MPI_Comm comm);

// FNV-1a over the run state (the scalars, every JSON document, every per-rank row), stored as
// the root attribute run_state_checksum and checked by verify_checksums: a flipped bit in the
// data position must fail verification like one in a tensor.
uint64_t run_state_checksum(int64_t step, int64_t epoch, int64_t consumed_samples, int world_size,
                            int zero_stage, const std::map<std::string, std::string>& json,
                            const std::map<std::string, std::vector<std::vector<uint64_t>>>& rows);
uint64_t run_state_checksum(const CheckpointInfo& info);

void write_root_attributes(hid_t file, const RunStateRecord& state, Layout layout,
                           const std::string& where);
// Creates the run_state datasets (collective in a parallel file); only `writes_data` ranks
// contribute bytes, the others select nothing.
void write_run_state(hid_t file, const RunStateRecord& state, hid_t lcpl, hid_t dxpl,
                     bool writes_data, const std::string& where);

// Reads the root attributes and run_state/ into `info` (datasets excluded).
void read_run_state(hid_t file, CheckpointInfo& info, const std::string& where);

}  // namespace autotrain::ckpt
