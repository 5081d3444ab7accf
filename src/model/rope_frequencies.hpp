#pragma once
// The Llama family's rotary inverse frequencies, shared by the CPU model (llama.cpp) and the
// device model (gpu/llama.cpp), which both turn them into cos/sin tables with
// kernels::rope_tables: one definition, so the two devices rotate by the same angles.
#include <cmath>
#include <cstddef>
#include <numbers>
#include <vector>

#include "autotrain/model/config.hpp"

namespace autotrain::model {

// The rotary inverse frequencies theta^(-2i/D), i < D/2, with Llama 3.1's frequency bands when
// rope_scaling is llama3: long wavelengths divided by `factor`, short ones kept, a smooth blend
// between.
inline std::vector<double> inverse_frequencies(const ModelConfig& c) {
  const int D = c.head_size();
  std::vector<double> inv(static_cast<std::size_t>(D / 2));
  for (int i = 0; i < D / 2; ++i) inv[std::size_t(i)] = std::pow(c.rope_theta, -2.0 * i / D);
  if (c.rope_scaling.type != "llama3") return inv;
  const RopeScaling& s = c.rope_scaling;
  const double old_context = s.original_max_position_embeddings;
  const double low_wavelen = old_context / s.low_freq_factor;
  const double high_wavelen = old_context / s.high_freq_factor;
  for (double& f : inv) {
    const double wavelen = 2 * std::numbers::pi / f;
    if (wavelen < high_wavelen) continue;
    if (wavelen > low_wavelen) {
      f /= s.factor;
    } else {
      const double smooth =
          (old_context / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
      f = (1 - smooth) * f / s.factor + smooth * f;
    }
  }
  return inv;
}

}  // namespace autotrain::model
