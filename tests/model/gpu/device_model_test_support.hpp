#pragma once
// For the device-model tests (gpt2_test.cpp, llama_test.cpp): how each element type is stored
// on the host and how close it must come to the CPU model in double, a UnitAccess that records
// the hook calls, the per-tensor comparison, and the flat parameters and gradients on the device.
//
// Tolerances per element type. Loss: |gpu - cpu| <= loss_rtol·|cpu|. Gradients, per tensor with
// g_max = max |cpu| over that tensor: |gpu - cpu| <= grad_rtol·|cpu| + grad_atol·g_max for every
// element, and ||gpu - cpu||₂ <= grad_l2·||cpu||₂ for the tensor as a whole.
//   fp32: loss 1e-5, rtol 1e-4, atol 1e-4, l2 1e-4   (nothing is rounded; summation order differs)
//   fp16: loss 5e-3, rtol 2e-2, atol 1e-2, l2 1e-2   (10-bit mantissa, ~20 roundings deep)
//   bf16: loss 2e-2, rtol 1e-1, atol 5e-2, l2 5e-2   (7-bit mantissa, ~20 roundings deep)
// A wrong transpose, a missing += or a lost residual path is off by the gradient's own size, far
// above any of these.
#ifdef AUTOTRAIN_HAVE_CUDA
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "autotrain/core/dtype.hpp"
#include "autotrain/core/gpu/device.hpp"
#include "autotrain/kernels/gpu/matmul.hpp"
#include "autotrain/model/param_layout.hpp"
#include "autotrain/model/unit_access.hpp"

namespace autotrain::testing {

using model::BasicFlatUnitAccess;
using model::BasicUnitAccess;
using model::ParamLayout;
using Vec = std::vector<double>;

template <typename F>
struct Precision;
template <>
struct Precision<float> {
  using Bits = float;
  static constexpr double loss_rtol = 1e-5, grad_rtol = 1e-4, grad_atol = 1e-4, grad_l2 = 1e-4;
  static Bits encode(double x) { return static_cast<float>(x); }
  static double decode(Bits bits) { return bits; }
};
template <>
struct Precision<__nv_bfloat16> {
  using Bits = std::uint16_t;
  static constexpr double loss_rtol = 2e-2, grad_rtol = 1e-1, grad_atol = 5e-2, grad_l2 = 5e-2;
  static Bits encode(double x) { return float_to_bf16(static_cast<float>(x)); }
  static double decode(Bits bits) { return bf16_to_float(bits); }
};
template <>
struct Precision<__half> {
  using Bits = std::uint16_t;
  static constexpr double loss_rtol = 5e-3, grad_rtol = 2e-2, grad_atol = 1e-2, grad_l2 = 1e-2;
  static Bits encode(double x) { return float_to_fp16(static_cast<float>(x)); }
  static double decode(Bits bits) { return fp16_to_float(bits); }
};

// x rounded to F and back: the value both models see.
template <typename F>
double round_to(double x) {
  return Precision<F>::decode(Precision<F>::encode(x));
}

// Whether a and b hold the same bytes (floats compared bit for bit, not by value); names the
// first element that differs.
template <typename T>
::testing::AssertionResult same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) {
    return ::testing::AssertionFailure() << a.size() << " elements against " << b.size();
  }
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::memcmp(&a[i], &b[i], sizeof(T)) != 0) {
      return ::testing::AssertionFailure() << "element " << i << " of " << a.size() << " differs";
    }
  }
  return ::testing::AssertionSuccess();
}

// Records every hook call as "params 3", "release 3", ... and forwards it to `inner`.
template <typename F>
class RecordingAccess final : public BasicUnitAccess<F> {
 public:
  RecordingAccess(BasicUnitAccess<F>& inner, std::vector<std::string>& events)
      : inner_(inner), events_(events) {}
  const F* params(int unit) override {
    events_.push_back("params " + std::to_string(unit));
    return inner_.params(unit);
  }
  void release(int unit) override {
    events_.push_back("release " + std::to_string(unit));
    inner_.release(unit);
  }
  F* grads(int unit) override {
    events_.push_back("grads " + std::to_string(unit));
    return inner_.grads(unit);
  }
  void grads_ready(int unit) override {
    events_.push_back("grads_ready " + std::to_string(unit));
    inner_.grads_ready(unit);
  }

 private:
  BasicUnitAccess<F>& inner_;
  std::vector<std::string>& events_;
};

// |gpu - cpu| over elements [offset, offset + count), per element and as a tensor, with the
// tolerances of F (top of the file).
template <typename F>
void expect_close_tensor(const Vec& gpu, const Vec& cpu, std::size_t offset, std::size_t count,
                         const std::string& what) {
  double cpu_max = 0, diff_sq = 0, cpu_sq = 0;
  for (std::size_t i = offset; i < offset + count; ++i) {
    cpu_max = std::max(cpu_max, std::abs(cpu[i]));
    diff_sq += (gpu[i] - cpu[i]) * (gpu[i] - cpu[i]);
    cpu_sq += cpu[i] * cpu[i];
  }
  ASSERT_GT(cpu_max, 0.0) << what << ": the reference is all zero";
  std::size_t worst = offset;
  double worst_excess = -INFINITY;
  for (std::size_t i = offset; i < offset + count; ++i) {
    const double bound =
        Precision<F>::grad_rtol * std::abs(cpu[i]) + Precision<F>::grad_atol * cpu_max;
    const double excess = std::isnan(gpu[i]) ? INFINITY : std::abs(gpu[i] - cpu[i]) - bound;
    if (excess > worst_excess) {
      worst_excess = excess;
      worst = i;
    }
  }
  EXPECT_LE(worst_excess, 0.0) << what << "[" << worst - offset << "] is " << gpu[worst]
                               << " on the GPU, " << cpu[worst] << " on the CPU (max |cpu| "
                               << cpu_max << ")";
  EXPECT_LE(std::sqrt(diff_sq), Precision<F>::grad_l2 * std::sqrt(cpu_sq))
      << what << ": relative L2 error " << std::sqrt(diff_sq / cpu_sq);
}

// A stream, a cuBLASLt handle, and the flat parameters (already rounded to F) and a zeroed
// gradient buffer of one layout on the device.
template <typename F>
class DeviceState {
 public:
  using Bits = typename Precision<F>::Bits;

  DeviceState(const ParamLayout& layout, const Vec& params)
      : layout_(layout), size_(params.size()) {
    std::vector<Bits> bits(size_);
    for (std::size_t i = 0; i < size_; ++i) bits[i] = Precision<F>::encode(params[i]);
    params_ = autotrain::gpu::DeviceBuffer(size_ * sizeof(F));
    params_.copy_from_host(bits.data(), size_ * sizeof(F));
    grads_ = autotrain::gpu::DeviceBuffer(size_ * sizeof(F));
    zero_grads();
  }

  cudaStream_t stream() const { return stream_.get(); }
  const kernels::gpu::BlasHandle& blas() const { return blas_; }
  void sync() const { stream_.synchronize(); }
  void zero_grads() {
    grads_.zero(stream());
    sync();
  }
  BasicFlatUnitAccess<F> access() const {
    return BasicFlatUnitAccess<F>(layout_, params_.as<F>(), grads_.as<F>());
  }

  // The gradient buffer after the queued work is done, as F's bits (for bitwise comparisons) and
  // decoded to double.
  std::vector<Bits> grad_bits() const {
    sync();
    std::vector<Bits> bits(size_);
    grads_.copy_to_host(bits.data(), size_ * sizeof(F));
    return bits;
  }
  Vec grads() const {
    const std::vector<Bits> bits = grad_bits();
    Vec values(size_);
    for (std::size_t i = 0; i < size_; ++i) values[i] = Precision<F>::decode(bits[i]);
    return values;
  }

 private:
  const ParamLayout& layout_;
  std::size_t size_;
  autotrain::gpu::Stream stream_;
  kernels::gpu::BlasHandle blas_;
  autotrain::gpu::DeviceBuffer params_;
  autotrain::gpu::DeviceBuffer grads_;
};

}  // namespace autotrain::testing
#endif  // AUTOTRAIN_HAVE_CUDA
