#pragma once
// The rotary angles of the Llama-style decoder, shared by the CPU model (llama.cpp) and the
// device model (gpu/llama.cpp), which both fill their cos/sin tables with rotary_tables: one
// definition, so the two devices rotate by the same angles.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numbers>
#include <vector>

#include "autotrain/core/error.hpp"
#include "autotrain/kernels/rope.hpp"
#include "autotrain/model/config.hpp"

namespace autotrain::model {

// YaRN: pair i keeps its frequency f where it turns more than beta_fast times over the original
// context, takes f / factor where it turns fewer than beta_slow times, and a linear blend of the
// two between: the ramp runs over the pairs from the dimension d(beta_fast) to d(beta_slow),
// d(turns) = R · ln(original / (turns · 2π)) / (2 ln theta), rounded outwards when `truncate`
// and clamped to [0, R - 1], as transformers computes it.
inline void yarn_blend(const RopeScaling& s, double theta, int R, std::vector<double>& inv) {
  const auto dimension = [&](double turns) {
    return R * std::log(s.original_max_position_embeddings / (turns * 2 * std::numbers::pi)) /
           (2 * std::log(theta));
  };
  double low = dimension(s.beta_fast), high = dimension(s.beta_slow);
  if (s.truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  low = std::max(low, 0.0);
  high = std::min(high, double(R - 1));
  if (low == high) high += 0.001;  // transformers' guard against a zero-width ramp
  for (std::size_t i = 0; i < inv.size(); ++i) {
    const double ramp = std::clamp((double(i) - low) / (high - low), 0.0, 1.0);
    inv[i] = inv[i] / s.factor * ramp + inv[i] * (1 - ramp);
  }
}

// The rotary inverse frequencies theta^(-2i/R), i < R/2 (R = rotary_size(): the head, or its
// first rotary_dim dimensions), with Llama 3.1's frequency bands when rope_scaling is llama3
// (long wavelengths divided by `factor`, short ones kept, a smooth blend between), divided by
// longrope's short_factor, by linear's factor, or YaRN's blend (yarn_blend).
inline std::vector<double> inverse_frequencies(const ModelConfig& c) {
  const int R = c.rotary_size();
  std::vector<double> inv(static_cast<std::size_t>(R / 2));
  for (int i = 0; i < R / 2; ++i) inv[std::size_t(i)] = std::pow(c.rope_theta, -2.0 * i / R);
  const RopeScaling& s = c.rope_scaling;
  if (s.type == "yarn") {
    yarn_blend(s, c.rope_theta, R, inv);
    return inv;
  }
  if (s.type == "longrope") {
    for (std::size_t i = 0; i < inv.size(); ++i) inv[i] /= s.short_factor[i];
    return inv;
  }
  if (s.type == "linear") {
    for (double& f : inv) f /= s.factor;
    return inv;
  }
  if (s.type != "llama3") return inv;
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

// cos, sin: [positions, rotary_size() / 2] each, resized and filled (longrope's are scaled by its
// attention_factor). Positions beyond longrope's original context would need its long_factor:
// refused. `local`: the tables of the sliding layers of a model with rope_local_theta (that base,
// no scaling).
template <typename F>
void rotary_tables(const ModelConfig& config, int positions, std::vector<F>& cos,
                   std::vector<F>& sin, bool local = false) {
  ModelConfig c = config;
  if (local) {
    c.rope_theta = config.rope_local_theta;
    c.rope_scaling = RopeScaling{};
  }
  const RopeScaling& s = c.rope_scaling;
  AT_CHECK(s.type != "longrope" || positions <= s.original_max_position_embeddings,
           "model: ", positions,
           " positions exceed rope_scaling's original_max_position_embeddings"
           " of ",
           s.original_max_position_embeddings,
           ": longrope's long_factor is not supported "
           "yet; use block_size <= ",
           s.original_max_position_embeddings);
  const std::vector<double> inv_freq = inverse_frequencies(c);
  const int half = c.rotary_size() / 2;
  cos.assign(std::size_t(positions) * std::size_t(half), F(0));
  sin.assign(cos.size(), F(0));
  const double scale = s.type == "longrope" || s.type == "yarn" ? s.attention_factor : 1.0;
  kernels::rope_tables(cos.data(), sin.data(), inv_freq.data(), positions, half, scale);
}

}  // namespace autotrain::model
