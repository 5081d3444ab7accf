#pragma once
// The kernels layer's private entry to oneDNN's matmul primitive (src/kernels/onednn_gemm.cpp).
#include <cstddef>
#include <string>

#include "autotrain/kernels/matmul.hpp"

namespace autotrain::kernels::onednn {

// c[M, N] = alpha · op(a) · op(b) + beta · c through a cached oneDNN matmul primitive, in fp32
// or, with bf16 true, with a and b rounded to bf16 and the products accumulated in fp32.
// Must not be called inside an OpenMP parallel region (the cache is not shared by threads).
void gemm(Transpose ta, Transpose tb, std::size_t M, std::size_t N, std::size_t K, float alpha,
          const float* a, std::size_t lda, const float* b, std::size_t ldb, float beta, float* c,
          std::size_t ldc, bool bf16);

// Until unshare_bf16(x), bf16 products read the bf16 values of any operand inside x[0, n) from one
// copy rounded here (x must not change meanwhile). Nested shares end in reverse order.
void share_bf16(const float* x, std::size_t n);
void unshare_bf16(const float* x);

// Whether oneDNN runs bf16 products natively here (AVX512-BF16 or AMX-BF16), and the name of the
// instruction set it found (after ONEDNN_MAX_CPU_ISA).
bool native_bf16();
std::string isa_name();
std::string version();

}  // namespace autotrain::kernels::onednn
