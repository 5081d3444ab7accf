#pragma once
// For the CUDA kernel tests (kernels_test.cpp, llama_kernels_test.cpp): how each element type is
// stored on the host and how close it must come to the CPU kernel in double
// (|gpu - cpu| <= atol + rtol·|cpu|), device copies that round their host values to the element
// type, and the fixture that skips without a device and gives each test a stream.
#ifdef AUTOTRAIN_HAVE_CUDA
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "autotrain/core/dtype.hpp"
#include "autotrain/core/gpu/device.hpp"

namespace autotrain::kernels::gpu_test {

using Vec = std::vector<double>;

// How one element type is stored on the host and how close it must come to the reference.
template <typename F>
struct Precision;
template <>
struct Precision<float> {
  using Bits = float;
  static constexpr double rtol = 1e-4;
  static constexpr double atol = 1e-5;
  static Bits encode(double x) { return static_cast<float>(x); }
  static double decode(Bits bits) { return bits; }
};
template <>
struct Precision<__nv_bfloat16> {
  using Bits = std::uint16_t;
  static constexpr double rtol = 5e-2;
  static constexpr double atol = 5e-2;
  static Bits encode(double x) { return float_to_bf16(static_cast<float>(x)); }
  static double decode(Bits bits) { return bf16_to_float(bits); }
};
template <>
struct Precision<__half> {
  using Bits = std::uint16_t;
  static constexpr double rtol = 1e-2;
  static constexpr double atol = 1e-2;
  static Bits encode(double x) { return float_to_fp16(static_cast<float>(x)); }
  static double decode(Bits bits) { return fp16_to_float(bits); }
};

inline std::vector<std::int32_t> random_ids(std::size_t n, int bound, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<std::int32_t> dist(0, bound - 1);
  std::vector<std::int32_t> ids(n);
  for (auto& id : ids) id = dist(gen);
  return ids;
}

// A device copy of `values` as F. The constructor rounds `values` in place to F's precision, so
// the CPU reference computes on exactly what the GPU sees.
template <typename F>
class DeviceTensor {
 public:
  explicit DeviceTensor(Vec& values) : buffer_(values.size() * sizeof(F)), size_(values.size()) {
    std::vector<typename Precision<F>::Bits> bits(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) {
      bits[i] = Precision<F>::encode(values[i]);
      values[i] = Precision<F>::decode(bits[i]);
    }
    buffer_.copy_from_host(bits.data(), bits.size() * sizeof(F));
  }
  F* get() const { return buffer_.as<F>(); }
  Vec download() const {
    std::vector<typename Precision<F>::Bits> bits(size_);
    buffer_.copy_to_host(bits.data(), bits.size() * sizeof(F));
    Vec values(size_);
    for (std::size_t i = 0; i < size_; ++i) values[i] = Precision<F>::decode(bits[i]);
    return values;
  }

 private:
  autotrain::gpu::DeviceBuffer buffer_;
  std::size_t size_;
};

inline autotrain::gpu::DeviceBuffer upload_ids(const std::vector<std::int32_t>& ids) {
  autotrain::gpu::DeviceBuffer buffer(ids.size() * sizeof(std::int32_t));
  buffer.copy_from_host(ids.data(), ids.size() * sizeof(std::int32_t));
  return buffer;
}

inline void expect_close(const Vec& gpu, const Vec& cpu, double rtol, double atol,
                         const std::string& what) {
  ASSERT_EQ(gpu.size(), cpu.size()) << what;
  std::size_t worst = 0;
  double worst_excess = -1.0;
  for (std::size_t i = 0; i < cpu.size(); ++i) {
    const double excess = std::abs(gpu[i] - cpu[i]) - (atol + rtol * std::abs(cpu[i]));
    if (!(excess <= worst_excess) || std::isnan(gpu[i])) {
      worst_excess = std::isnan(gpu[i]) ? INFINITY : excess;
      worst = i;
    }
  }
  EXPECT_LE(worst_excess, 0.0) << what << ": element " << worst << " is " << gpu[worst]
                               << " on the GPU, " << cpu[worst] << " on the CPU (rtol " << rtol
                               << ", atol " << atol << ")";
}

template <typename F>
class KernelFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    if (autotrain::gpu::device_count() == 0) {
      GTEST_SKIP() << "no CUDA device: cudaGetDeviceCount reports none, CUDA kernels not tested";
    }
    stream_.emplace();
  }
  cudaStream_t stream() const { return stream_->get(); }
  void sync() const { stream_->synchronize(); }
  void expect_close(const Vec& gpu, const Vec& cpu, const std::string& what) const {
    gpu_test::expect_close(gpu, cpu, Precision<F>::rtol, Precision<F>::atol, what);
  }

 private:
  std::optional<autotrain::gpu::Stream> stream_;
};

}  // namespace autotrain::kernels::gpu_test
#endif  // AUTOTRAIN_HAVE_CUDA
