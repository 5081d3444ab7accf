#pragma once
// The element types the CUDA code is instantiated for, as a GoogleTest type list with readable
// names (fp32, bf16, fp16) for TYPED_TEST_SUITE. Builds with CUDA only.
#ifdef AUTOTRAIN_HAVE_CUDA
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <gtest/gtest.h>

#include <string>
#include <type_traits>

namespace autotrain::testing {

struct GpuTypeNames {
  template <typename F>
  static std::string GetName(int) {
    if (std::is_same_v<F, float>) return "fp32";
    if (std::is_same_v<F, __nv_bfloat16>) return "bf16";
    return "fp16";
  }
};
using GpuElementTypes = ::testing::Types<float, __nv_bfloat16, __half>;

}  // namespace autotrain::testing
#endif  // AUTOTRAIN_HAVE_CUDA
