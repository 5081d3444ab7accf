#pragma once
// A digest of whole files read by all ranks together ("sum-fmix64" over 8-byte words), the same
// on any number of ranks: what tells a model folder's weights from the same files changed in
// place (docs/model.md, "Identity").
//
// Invariant: the files are read as one byte sequence, each file zero-padded to a multiple of 8
// bytes. Word i (its position in that sequence, counting 8-byte words) with little-endian value w
// contributes
//     term(i, w) = fmix64((i * 0x9E3779B97F4A7C15) xor w)        (all arithmetic mod 2^64)
// and the digest is the sum of the terms mod 2^64: any one changed word changes it, and the sum
// does not depend on who added which terms. The sequence is cut into blocks of `block_bytes`;
// rank r reads blocks r, r + world_size, ... and the ranks' sums are added (MPI_SUM).
// Not a cryptographic hash: it detects changes, not a forger.
#include <mpi.h>

#include <cstdint>
#include <filesystem>
#include <span>

namespace autotrain::ckpt {

inline constexpr uint64_t kDigestBlockBytes = uint64_t{64} << 20;

// Collective over `comm`. `block_bytes` must be a positive multiple of 8. Throws CollectiveError
// on every rank (naming the file) when a rank cannot read its blocks.
uint64_t files_digest(std::span<const std::filesystem::path> files, MPI_Comm comm,
                      uint64_t block_bytes = kDigestBlockBytes);

}  // namespace autotrain::ckpt
