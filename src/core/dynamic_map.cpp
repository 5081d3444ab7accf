// bitsandbytes' dynamic maps (core/dynamic_map.hpp). Compiled with -ffp-contract=off
// (CMakeLists.txt): the fused multiply-adds are the ones written here, as PyTorch's kernel has
// them, and every other product and sum is rounded on its own.
#include "autotrain/core/dynamic_map.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "autotrain/core/error.hpp"

namespace autotrain {
namespace {

// torch.linspace(start, end, n) in fp32 as PyTorch's CPU kernel computes it: the first half from
// the start, the second from the end, each point one fused multiply-add of the step; in runs of
// 16 points (two vectors of 8 lanes), each vector's first point so and the others that point plus
// lane · step, rounded twice. (Read off torch 1.13 on x86, whose values the tests compare bit for
// bit; another build of torch may differ in the last bit of a few points, and bitsandbytes' map
// with it.)
std::vector<float> linspace_as_torch(float start, float end, int n) {
  const float step = (end - start) / static_cast<float>(n - 1);
  const auto point = [&](int i) {
    return i < n / 2 ? std::fma(step, static_cast<float>(i), start)
                     : std::fma(-step, static_cast<float>(n - i - 1), end);
  };
  constexpr int kLanes = 8;
  std::vector<float> out;
  int i = 0;
  for (; n - i >= 2 * kLanes; i += 2 * kLanes) {
    for (int vector = i; vector < i + 2 * kLanes; vector += kLanes) {
      const float base = point(vector);
      for (int lane = 0; lane < kLanes; ++lane) {
        out.push_back(base + static_cast<float>(lane) * step);
      }
    }
  }
  for (; i < n; ++i) out.push_back(point(i));
  return out;
}

}  // namespace

DynamicMap create_dynamic_map(bool is_signed) {
  std::vector<float> entries;
  for (int i = 0; i < 7; ++i) {
    const int k = is_signed ? 1 << i : 1 << (i + 1);
    const std::vector<float> points = linspace_as_torch(0.1f, 1.0f, k + 1);
    // The means in fp32, times the Python float 10^(i - 6), which torch rounds to fp32 first.
    const auto power = static_cast<float>(std::pow(10.0, i - 6));
    for (std::size_t j = 0; j + 1 < points.size(); ++j) {
      const float mean = (points[j] + points[j + 1]) / 2.0f;
      entries.push_back(power * mean);
      if (is_signed) entries.push_back(-power * mean);
    }
  }
  entries.push_back(0.0f);
  entries.push_back(1.0f);
  AT_CHECK(entries.size() == 256, "internal: the dynamic map has ", entries.size(), " entries");
  std::sort(entries.begin(), entries.end());
  DynamicMap map{};
  std::copy(entries.begin(), entries.end(), map.begin());
  return map;
}

const DynamicMap& signed_dynamic_map() {
  static const DynamicMap map = create_dynamic_map(true);
  return map;
}

const DynamicMap& unsigned_dynamic_map() {
  static const DynamicMap map = create_dynamic_map(false);
  return map;
}

}  // namespace autotrain
