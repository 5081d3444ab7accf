#pragma once
// Matrix products through OpenBLAS (cblas_sgemm for float, cblas_dgemm for double), all row-major.
// IC input channels, OC output channels. matmul_* take weights in Hugging Face Conv1D layout
// [IC, OC] (GPT-2); linear_* in torch.nn.Linear layout [OC, IC] (Llama, Mistral, Qwen).
#include <cstddef>

namespace autotrain::kernels {

enum class Transpose { no, yes };

// c[M, N] = alpha · op(a)[M, K] · op(b)[K, N] + beta · c, row-major with leading dimensions.
template <typename F>
void gemm(Transpose ta, Transpose tb, std::size_t M, std::size_t N, std::size_t K, F alpha,
          const F* a, std::size_t lda, const F* b, std::size_t ldb, F beta, F* c, std::size_t ldc);

// out[N, OC] = inp[N, IC] · weight[IC, OC] + bias[OC]   (bias may be null)
template <typename F>
void matmul_forward(F* out, const F* inp, const F* weight, const F* bias, std::size_t N, int IC,
                    int OC);

// dinp[N, IC] = dout · weightᵀ (overwritten: an activation gradient);
// dweight[IC, OC] += inpᵀ · dout; dbias[OC] += Σ_n dout[n, :] (dbias may be null).
template <typename F>
void matmul_backward(F* dinp, F* dweight, F* dbias, const F* dout, const F* inp, const F* weight,
                     std::size_t N, int IC, int OC);

// out[N, OC] = inp[N, IC] · weight[OC, IC]ᵀ + bias[OC]   (bias may be null)
template <typename F>
void linear_forward(F* out, const F* inp, const F* weight, const F* bias, std::size_t N, int IC,
                    int OC);

// dinp[N, IC] = dout · weight (overwritten: an activation gradient; dinp may be null to skip it,
// e.g. for the first layer's input); dweight[OC, IC] += doutᵀ · inp; dbias[OC] += Σ_n dout[n, :]
// (dbias may be null).
template <typename F>
void linear_backward(F* dinp, F* dweight, F* dbias, const F* dout, const F* inp, const F* weight,
                     std::size_t N, int IC, int OC);

// GFLOP/s of one n×n×n sgemm (best of `repeats`) with the current thread count: the machine's
// practical peak that MFU is measured against.
double measure_sgemm_gflops(int n = 2048, int repeats = 3);

}  // namespace autotrain::kernels
