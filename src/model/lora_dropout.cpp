// LoRA's adapter dropout: the mask from a counter-based hash, and the low-rank correction the
// merged weights leave out (model/lora_dropout.hpp has the algebra).
#include "autotrain/model/lora_dropout.hpp"

#include <algorithm>
#include <cstddef>

#include "autotrain/core/error.hpp"
#include "autotrain/kernels/matmul.hpp"

namespace autotrain::model {
namespace {

// splitmix64's output function (as data/sampler.cpp's SplitMix64): every input bit reaches
// every output bit, so neighbouring counters give unrelated draws.
std::uint64_t mix(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::uint64_t combine(std::uint64_t key, std::uint64_t value) {
  return mix(key ^ mix(value));
}

// The salt that keeps these draws apart from any other use of the seed.
constexpr std::uint64_t kDropoutSalt = 0x6c6f72612d64726full;  // "lora-dro"

// A draw in [0, 1) from the top 53 bits.
double uniform(std::uint64_t bits) {
  return double(bits >> 11) * 0x1.0p-53;
}

}  // namespace

DropoutMask::DropoutMask(double p, const DropoutRows& rows, std::uint64_t module)
    : p_(p),
      kept_factor_(p < 1 ? p / (1 - p) : 0.0),
      key_(combine(combine(combine(kDropoutSalt, rows.seed), rows.step), module)),
      first_row_(rows.first_row) {
  AT_CHECK(p >= 0 && p <= 1, "lora_dropout must be in [0, 1], got ", p);
}

std::uint64_t DropoutMask::row_key(std::size_t row) const {
  return combine(key_, first_row_ + row);
}

bool DropoutMask::kept(std::size_t row, std::size_t column) const {
  return uniform(mix(row_key(row) + column)) >= p_;
}

template <typename F>
void DropoutMask::times_factors(std::size_t row, const F* v, F* out, std::size_t columns,
                                bool add) const {
  const std::uint64_t key = row_key(row);
  const F keep = static_cast<F>(kept_factor_);
  for (std::size_t j = 0; j < columns; ++j) {
    const F f = uniform(mix(key + j)) >= p_ ? keep : F(-1);
    out[j] = add ? out[j] + v[j] * f : v[j] * f;
  }
}

namespace {

// δ = x ⊙ f [N, in] into scratch.delta, and u = δ · Aᵀ [N, r] into scratch.u.
template <typename F>
void delta_and_u(const DropoutMask& mask, const LoraModule<F>& m, const F* x, std::size_t rows,
                 DropoutScratch<F>& scratch) {
  using kernels::Transpose;
  scratch.delta.resize(std::max(scratch.delta.size(), rows * m.in));
  scratch.u.resize(std::max(scratch.u.size(), rows * m.r));
  F* delta = scratch.delta.data();
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t i = 0; i < static_cast<std::ptrdiff_t>(rows); ++i) {
    const auto row = static_cast<std::size_t>(i);
    mask.times_factors(row, x + row * m.in, delta + row * m.in, m.in, false);
  }
  kernels::gemm(Transpose::no, Transpose::yes, rows, m.r, m.in, F(1), delta, m.in, m.A, m.in, F(0),
                scratch.u.data(), m.r);
}

}  // namespace

template <typename F>
void lora_dropout_forward(const DropoutMask& mask, const LoraModule<F>& m, const F* x,
                          std::size_t rows, F* y, std::size_t ldy, DropoutScratch<F>& scratch) {
  using kernels::Transpose;
  delta_and_u(mask, m, x, rows, scratch);
  // y[N, out] += s · u[N, r] · B[out, r]ᵀ
  kernels::gemm(Transpose::no, Transpose::yes, rows, m.out, m.r, m.scale, scratch.u.data(), m.r,
                m.B, m.r, F(1), y, ldy);
}

template <typename F>
void lora_dropout_backward(const DropoutMask& mask, const LoraModule<F>& m, const F* x, const F* dy,
                           std::size_t ldy, std::size_t rows, F* dx, F* dA, F* dB,
                           DropoutScratch<F>& scratch) {
  using kernels::Transpose;
  delta_and_u(mask, m, x, rows, scratch);  // as forward had them: the same mask, the same bits
  scratch.du.resize(std::max(scratch.du.size(), rows * m.r));
  F* du = scratch.du.data();
  // dB[out, r] += s · dy[N, out]ᵀ · u[N, r];  du[N, r] = s · dy · B[out, r]
  kernels::gemm(Transpose::yes, Transpose::no, m.out, m.r, rows, m.scale, dy, ldy, scratch.u.data(),
                m.r, F(1), dB, m.r);
  kernels::gemm(Transpose::no, Transpose::no, rows, m.r, m.out, m.scale, dy, ldy, m.B, m.r, F(0),
                du, m.r);
  // dA[r, in] += du[N, r]ᵀ · δ[N, in]
  F* delta = scratch.delta.data();
  kernels::gemm(Transpose::yes, Transpose::no, m.r, m.in, rows, F(1), du, m.r, delta, m.in, F(1),
                dA, m.in);
  // dx[N, in] += (du · A[r, in]) ⊙ f; du · A reuses δ's buffer
  kernels::gemm(Transpose::no, Transpose::no, rows, m.in, m.r, F(1), du, m.r, m.A, m.in, F(0),
                delta, m.in);
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t i = 0; i < static_cast<std::ptrdiff_t>(rows); ++i) {
    const auto row = static_cast<std::size_t>(i);
    mask.times_factors(row, delta + row * m.in, dx + row * m.in, m.in, true);
  }
}

template void DropoutMask::times_factors(std::size_t, const float*, float*, std::size_t,
                                         bool) const;
template void DropoutMask::times_factors(std::size_t, const double*, double*, std::size_t,
                                         bool) const;
template void lora_dropout_forward(const DropoutMask&, const LoraModule<float>&, const float*,
                                   std::size_t, float*, std::size_t, DropoutScratch<float>&);
template void lora_dropout_forward(const DropoutMask&, const LoraModule<double>&, const double*,
                                   std::size_t, double*, std::size_t, DropoutScratch<double>&);
template void lora_dropout_backward(const DropoutMask&, const LoraModule<float>&, const float*,
                                    const float*, std::size_t, std::size_t, float*, float*, float*,
                                    DropoutScratch<float>&);
template void lora_dropout_backward(const DropoutMask&, const LoraModule<double>&, const double*,
                                    const double*, std::size_t, std::size_t, double*, double*,
                                    double*, DropoutScratch<double>&);

}  // namespace autotrain::model
