// The CPU engine's memory policy (memory.hpp).
#include "memory.hpp"

#include <algorithm>

namespace autotrain::zero {

void HostMemory::zero(float* data, std::size_t count) {
  std::fill_n(data, count, 0.0f);
}

void HostMemory::add_into(float* into, const float* part, std::size_t count) {
#pragma omp parallel for simd schedule(static)
  for (std::size_t i = 0; i < count; ++i) into[i] += part[i];
}

}  // namespace autotrain::zero
