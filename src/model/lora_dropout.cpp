// LoRA's adapter dropout: the mask from the counter-based hash (kernels/dropout_hash.hpp), and the
// CPU's arithmetic for the low-rank correction whose algebra model/lora_dropout.hpp writes.
#include "autotrain/model/lora_dropout.hpp"

#include <cstddef>

#include "autotrain/core/error.hpp"

namespace autotrain::model {
namespace {

// The salt that keeps these draws apart from any other use of the seed.
constexpr std::uint64_t kDropoutSalt = 0x6c6f72612d64726full;  // "lora-dro"

}  // namespace

DropoutMask::DropoutMask(double p, const DropoutRows& rows, std::uint64_t module)
    : kept_factor_(p < 1 ? p / (1 - p) : 0.0) {
  AT_CHECK(p >= 0 && p <= 1, "lora_dropout must be in [0, 1], got ", p);
  using kernels::hash_combine;
  hash_.key = hash_combine(hash_combine(hash_combine(kDropoutSalt, rows.seed), rows.step), module);
  hash_.first_row = rows.first_row;
  hash_.threshold = kernels::DropoutHash::threshold_of(p);
}

template <typename F>
void DropoutMask::times_factors(std::size_t row, const F* v, F* out, std::size_t columns,
                                bool add) const {
  const std::uint64_t key = hash_.row_key(row);
  const F keep = static_cast<F>(kept_factor_);
  for (std::size_t j = 0; j < columns; ++j) {
    const F f = hash_.kept(key, j) ? keep : F(-1);
    out[j] = add ? out[j] + v[j] * f : v[j] * f;
  }
}

template <typename F>
void CpuDropoutOps<F>::times_factors(const DropoutMask& mask, const F* v, F* out, std::size_t rows,
                                     std::size_t columns, bool add) const {
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t i = 0; i < static_cast<std::ptrdiff_t>(rows); ++i) {
    const auto row = static_cast<std::size_t>(i);
    mask.times_factors(row, v + row * columns, out + row * columns, columns, add);
  }
}

template void DropoutMask::times_factors(std::size_t, const float*, float*, std::size_t,
                                         bool) const;
template void DropoutMask::times_factors(std::size_t, const double*, double*, std::size_t,
                                         bool) const;
template class CpuDropoutOps<float>;
template class CpuDropoutOps<double>;

}  // namespace autotrain::model
