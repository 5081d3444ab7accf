#pragma once
// Device elements copied back to the host, read as fp32 there: the decoders' logits rows.
// Host code (the bf16/fp16 bit patterns are decoded by core/dtype.hpp, not by CUDA's headers).
#ifdef AUTOTRAIN_HAVE_CUDA
#include <cstdint>
#include <cstring>
#include <span>
#include <type_traits>

#include "autotrain/core/dtype.hpp"
#include "autotrain/core/gpu/device.hpp"

namespace autotrain::model::gpu {

// out[i] = row[i] in fp32, for out.size() elements of row (host memory holding F's bits).
template <typename F>
void to_host_floats(const F* row, std::span<float> out) {
  for (std::size_t i = 0; i < out.size(); ++i) {
    if constexpr (std::is_same_v<F, float>) {
      out[i] = row[i];
    } else {
      std::uint16_t bits;
      static_assert(sizeof bits == sizeof(F));
      std::memcpy(&bits, &row[i], sizeof bits);
      out[i] = std::is_same_v<F, __nv_bfloat16> ? bf16_to_float(bits) : fp16_to_float(bits);
    }
  }
}

}  // namespace autotrain::model::gpu
#endif  // AUTOTRAIN_HAVE_CUDA
