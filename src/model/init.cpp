// Initialisation from a seed, element by element from a counter-based generator, by the rules
// of the model's family (ParamTensor::init).
#include "autotrain/model/init.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string_view>

#include "autotrain/core/error.hpp"
#include "autotrain/model/param_source.hpp"

namespace autotrain::model {
namespace {

// splitmix64's finaliser: a bijective mix whose outputs pass BigCrush for counter inputs.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// FNV-1a of the tensor name: the key does not depend on where the tensor sits in the buffer.
std::uint64_t name_key(std::string_view name) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char ch : name) h = (h ^ ch) * 0x100000001b3ULL;
  return h;
}

// (0, 1], never 0 so the logarithm is finite.
double to_unit_interval(std::uint64_t bits) {
  return (static_cast<double>(bits >> 11) + 1.0) * (1.0 / 9007199254740992.0);
}

}  // namespace

double init_normal(std::uint64_t seed, std::uint64_t tensor_key, std::uint64_t element) {
  // Box-Muller from two independent 64-bit draws of the counter (seed, tensor, element, i).
  const std::uint64_t base = mix(mix(seed) ^ tensor_key) ^ (element * 2);
  const double u1 = to_unit_interval(mix(base));
  const double u2 = to_unit_interval(mix(base ^ 1));
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

double init_uniform(std::uint64_t seed, std::uint64_t tensor_key, std::uint64_t element) {
  const std::uint64_t base = mix(mix(seed) ^ tensor_key) ^ (element * 2);
  return 2.0 * to_unit_interval(mix(base)) - 1.0;
}

void init_params(const ParamLayout& layout, std::uint64_t seed, std::span<float> out,
                 std::size_t begin) {
  const std::size_t end = begin + out.size();
  AT_CHECK(end <= layout.padded_size(), "init_params: range [", begin, ", ", end,
           ") exceeds the parameter buffer of ", layout.padded_size(), " elements");
  std::fill(out.begin(), out.end(), 0.0f);  // padding and zero-initialised tensors
  for (const ParamTensor& t : layout.tensors()) init_tensor(t, t.init, seed, out, begin);
}

void init_tensor(const ParamTensor& t, const InitRule& rule, std::uint64_t seed,
                 std::span<float> out, std::size_t begin) {
  const std::size_t end = begin + out.size();
  const std::size_t lo = std::max(begin, t.offset);
  const std::size_t hi = std::min(end, t.offset + t.numel);
  if (lo >= hi) return;
  if (rule.kind == InitRule::zero) {
    std::fill(out.begin() + static_cast<std::ptrdiff_t>(lo - begin),
              out.begin() + static_cast<std::ptrdiff_t>(hi - begin), 0.0f);
  } else if (rule.kind == InitRule::one) {
    std::fill(out.begin() + static_cast<std::ptrdiff_t>(lo - begin),
              out.begin() + static_cast<std::ptrdiff_t>(hi - begin), 1.0f);
  } else {
    const std::uint64_t key = name_key(t.name);
    const std::size_t stop = std::min(hi, t.offset + t.file_numel());  // padded rows stay 0
    const bool normal = rule.kind == InitRule::normal;
#pragma omp parallel for schedule(static)
    for (std::size_t i = lo; i < stop; ++i) {
      const std::uint64_t element = i - t.offset;
      out[i - begin] = static_cast<float>(normal ? rule.std * init_normal(seed, key, element)
                                                 : rule.bound * init_uniform(seed, key, element));
    }
  }
}

std::string RandomInit::describe() const {
  return cat("random initialisation (seed ", seed_, ")");
}

}  // namespace autotrain::model
