#pragma once
// The counter-based hash behind LoRA's adapter-dropout masks (model/lora_dropout.hpp), one
// definition for the CPU and the CUDA kernels (kernels/gpu/dropout.hpp), so that both devices
// drop the same elements. Nothing is stored: element (row, column) of a mask is a pure function
// of the mask's key, the row's global index and the column.
//
// The mixing function is splitmix64's output function (as data/sampler.cpp's SplitMix64): every
// input bit reaches every output bit, so neighbouring counters give unrelated draws. A draw is
// the top 53 bits of a hash, u = bits · 2⁻⁵³ in [0, 1); an element is kept when u >= p, which is
// the integer test bits >= ceil(p · 2⁵³) (exact: no floating point on the device).
#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define AT_HOST_DEVICE __host__ __device__
#else
#define AT_HOST_DEVICE
#endif

namespace autotrain::kernels {

AT_HOST_DEVICE inline std::uint64_t hash_mix(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

AT_HOST_DEVICE inline std::uint64_t hash_combine(std::uint64_t key, std::uint64_t value) {
  return hash_mix(key ^ hash_mix(value));
}

// One mask: which elements of a [rows, columns] input are kept.
struct DropoutHash {
  std::uint64_t key = 0;        // of (seed, optimizer step, module)
  std::uint64_t first_row = 0;  // the global index of the input's row 0
  std::uint64_t threshold = 0;  // ceil(p · 2⁵³): kept when the draw's 53 bits reach it

  // p in [0, 1] (p = 1 keeps nothing: no draw reaches 2⁵³).
  static std::uint64_t threshold_of(double p) {
    return static_cast<std::uint64_t>(std::ceil(p * 0x1.0p53));
  }
  // The hash of the input's row `row`, from which its columns' draws follow.
  AT_HOST_DEVICE std::uint64_t row_key(std::uint64_t row) const {
    return hash_combine(key, first_row + row);
  }
  AT_HOST_DEVICE bool kept(std::uint64_t row_key, std::uint64_t column) const {
    return (hash_mix(row_key + column) >> 11) >= threshold;
  }
};

}  // namespace autotrain::kernels
