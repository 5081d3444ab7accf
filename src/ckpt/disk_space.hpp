#pragma once
// Private to the ckpt layer: a checkpoint file's room on disk, reserved before anything is
// written into it (writer.cpp).
#include <cstdint>
#include <filesystem>
#include <vector>

#include "autotrain/ckpt/checkpoint.hpp"

namespace autotrain::ckpt {

// An upper bound of the bytes a file takes whose datasets hold `lengths` float32 elements: the
// data, the alignment gap before each dataset large enough to be aligned, and room for HDF5's
// metadata (the superblock, the run state, object headers: ~1 KiB per dataset).
uint64_t file_bytes_bound(const std::vector<uint64_t>& lengths, const WriteOptions& options);

// Reserves `bytes` of disk for the new `file` before anything is written into it, so that a
// full file system fails the save here, with that reason, and not in the middle of a collective
// write (where one rank's error would leave the others waiting). File systems without
// fallocate (EOPNOTSUPP) are only checked against their free space.
void reserve_space(const std::filesystem::path& file, uint64_t bytes);

}  // namespace autotrain::ckpt
