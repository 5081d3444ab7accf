#pragma once
// The per-dataset checksum of a checkpoint ("sum-fmix64", docs/checkpoint-format.md).
//
// Invariant: the checksum of a logical tensor does not depend on how it is split among ranks.
// Element i (its logical index) with fp32 bit pattern b contributes
//     term(i, b) = fmix64((i * 0x9E3779B97F4A7C15) xor b)        (all arithmetic mod 2^64)
// and the checksum is the sum of the terms mod 2^64. fmix64 is MurmurHash3's 64-bit finaliser.
// A rank sums the terms of the pieces it holds; pieces add (MPI_SUM on uint64 wraps mod 2^64).
#include <cstdint>
#include <span>

namespace autotrain::ckpt {

// One value's term: its bits (a float's 32, or any 64) mixed with its position (MurmurHash3's
// finaliser), so that the sum of the terms sees where each value is.
inline uint64_t checksum_term(uint64_t index, uint64_t bits) {
  uint64_t x = (index * 0x9E3779B97F4A7C15ull) ^ bits;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

// Sum of the terms of values[k] at logical index offset + k.
uint64_t checksum_piece(uint64_t offset, std::span<const float> values);

}  // namespace autotrain::ckpt
