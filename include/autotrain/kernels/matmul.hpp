#pragma once
// Matrix products, all row-major: float through oneDNN's matmul (OpenBLAS for matrix-vector
// products and inside OpenMP parallel regions), double through OpenBLAS.
// IC input channels, OC output channels. matmul_* take weights in Hugging Face Conv1D layout
// [IC, OC] (GPT-2); linear_* in torch.nn.Linear layout [OC, IC] (Llama, Mistral, Qwen).
#include <cstddef>
#include <string>

namespace autotrain::kernels {

enum class Transpose { no, yes };

// The precision of the float products on the CPU, process-wide: fp32, or bf16 (inputs rounded
// to bf16, products accumulated in fp32) where the CPU computes bf16 natively.
enum class GemmPrecision { fp32, bf16 };

// Sets the precision of the float products; bf16 on a CPU without native bf16 throws Error
// (callers check cpu_has_native_bf16 first). Returns the previous precision.
GemmPrecision set_gemm_precision(GemmPrecision precision);
GemmPrecision gemm_precision();

// Whether this CPU computes bf16 products natively (AVX512-BF16 or AMX-BF16, as oneDNN reports
// after ONEDNN_MAX_CPU_ISA), and the instruction set oneDNN runs its matmul with.
bool cpu_has_native_bf16();
std::string cpu_gemm_isa();
std::string onednn_version();  // "2.6.3"

// Sets the precision of the float products for its lifetime (a replica, a generate call).
class ScopedGemmPrecision {
 public:
  explicit ScopedGemmPrecision(GemmPrecision precision)
      : previous_(set_gemm_precision(precision)) {}
  ~ScopedGemmPrecision() { set_gemm_precision(previous_); }
  ScopedGemmPrecision(const ScopedGemmPrecision&) = delete;
  ScopedGemmPrecision& operator=(const ScopedGemmPrecision&) = delete;

 private:
  GemmPrecision previous_;
};

// Within its lifetime, under bf16 products, the products that read inside x[0, n) read one bf16
// copy of it made at construction, instead of rounding their operand again on each call (the LM
// head's and each linear's backward read their output gradient twice). x must not change while
// it lives. Under fp32 products, and for double, it does nothing.
class SharedBf16Operand {
 public:
  SharedBf16Operand(const float* x, std::size_t n);
  SharedBf16Operand(const double*, std::size_t) {}
  ~SharedBf16Operand();
  SharedBf16Operand(const SharedBf16Operand&) = delete;
  SharedBf16Operand& operator=(const SharedBf16Operand&) = delete;

 private:
  const float* x_ = nullptr;
};

// c[M, N] = alpha · op(a)[M, K] · op(b)[K, N] + beta · c, row-major with leading dimensions.
template <typename F>
void gemm(Transpose ta, Transpose tb, std::size_t M, std::size_t N, std::size_t K, F alpha,
          const F* a, std::size_t lda, const F* b, std::size_t ldb, F beta, F* c, std::size_t ldc);
// Its two definitions, declared before any use (src/kernels/matmul.cpp).
template <>
void gemm<float>(Transpose ta, Transpose tb, std::size_t M, std::size_t N, std::size_t K,
                 float alpha, const float* a, std::size_t lda, const float* b, std::size_t ldb,
                 float beta, float* c, std::size_t ldc);
template <>
void gemm<double>(Transpose ta, Transpose tb, std::size_t M, std::size_t N, std::size_t K,
                  double alpha, const double* a, std::size_t lda, const double* b, std::size_t ldb,
                  double beta, double* c, std::size_t ldc);

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
