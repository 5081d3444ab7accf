#pragma once
// CUDA matmuls through cuBLASLt (mirrors kernels/matmul.hpp), all row-major. IC input channels,
// OC output channels. matmul_* take weights in Hugging Face Conv1D layout [IC, OC] (GPT-2);
// linear_* in torch.nn.Linear layout [OC, IC] (Llama, Mistral, Qwen). Inputs float,
// __nv_bfloat16 or __half; accumulation always fp32 (CUBLAS_COMPUTE_32F: no TF32 for fp32).
#ifdef AUTOTRAIN_HAVE_CUDA
#include <cublasLt.h>

#include <cstddef>
#include <memory>

#include "autotrain/core/gpu/device.hpp"
#include "autotrain/kernels/matmul.hpp"

namespace autotrain::kernels::gpu {

// A cuBLASLt handle and the workspace its algorithms may use; create once, before the first step.
class BlasHandle {
 public:
  explicit BlasHandle(std::size_t workspace_bytes = std::size_t{32} << 20);
  ~BlasHandle();
  BlasHandle(const BlasHandle&) = delete;
  BlasHandle& operator=(const BlasHandle&) = delete;

  cublasLtHandle_t get() const { return handle_; }
  void* workspace() const { return workspace_.data(); }
  std::size_t workspace_bytes() const { return workspace_.bytes(); }

  // Descriptors and the chosen algorithm per gemm shape, built on a shape's first call so the
  // step loop neither allocates nor asks the heuristic again.
  struct Plans;
  Plans& plans() const { return *plans_; }

 private:
  cublasLtHandle_t handle_ = nullptr;
  autotrain::gpu::DeviceBuffer workspace_;
  std::unique_ptr<Plans> plans_;
};

// out[N, OC] = inp[N, IC] · weight[IC, OC] + bias[OC] (bias may be null; it is added in the
// cuBLASLt epilogue).
template <typename F>
void matmul_forward(const BlasHandle& blas, F* out, const F* inp, const F* weight, const F* bias,
                    std::size_t N, int IC, int OC, cudaStream_t stream);

// The MLP's first half: pre[N, OC] = inp · weight + bias (the GELU's input, which backward needs)
// and out[N, OC] = gelu(pre), in bf16/fp16 in one cuBLASLt call with the GELU_AUX_BIAS epilogue
// where it has one (the GELU then sees the fp32 accumulator before it is rounded to F), else (and
// in fp32, the mode that matches the CPU tightly) the gemm and the GELU kernel.
// AUTOTRAIN_CUDA_GELU_FUSION=off always takes the second way.
template <typename F>
void matmul_gelu_forward(const BlasHandle& blas, F* out, F* pre, const F* inp, const F* weight,
                         const F* bias, std::size_t N, int IC, int OC, cudaStream_t stream);

// Whether matmul_gelu_forward may run the GELU in cuBLASLt's epilogue for OC outputs (bf16/fp16,
// AUTOTRAIN_CUDA_GELU_FUSION not off, OC a multiple of 8). Its `out` then has bits that the GELU
// kernel need not reproduce from `pre`, since the epilogue reads the product before rounding:
// what keeps it rather than recomputing it (model/recompute.hpp) asks this.
template <typename F>
bool matmul_gelu_may_fuse(int OC);

// Floats of scratch matmul_backward needs for the bias gradient (0 is enough without a bias).
std::size_t matmul_backward_scratch_floats(std::size_t N, int OC);

// dinp[N, IC] = dout · weightᵀ (overwritten: an activation gradient);
// dweight[IC, OC] += inpᵀ · dout; dbias[OC] += Σ_n dout[n, :] (dbias may be null). The bias
// gradient is our own deterministic reduction: cuBLASLt's BGRAD epilogue overwrites, and
// parameter gradients must accumulate.
// gelu_pre: when not null, inp = gelu(gelu_pre) [N, IC] and dinp receives the gradient with
// respect to gelu_pre instead (dout · weightᵀ ⊙ gelu'(gelu_pre)), through cuBLASLt's DGELU
// epilogue where matmul_gelu_forward would use GELU_AUX_BIAS, else the gemm and the GELU backward
// kernel.
template <typename F>
void matmul_backward(const BlasHandle& blas, F* dinp, F* dweight, F* dbias, const F* dout,
                     const F* inp, const F* weight, float* scratch, std::size_t N, int IC, int OC,
                     cudaStream_t stream, const F* gelu_pre = nullptr);

// out[N, OC] = inp[N, IC] · weight[OC, IC]ᵀ + bias[OC] (bias may be null; it is added in the
// cuBLASLt epilogue).
template <typename F>
void linear_forward(const BlasHandle& blas, F* out, const F* inp, const F* weight, const F* bias,
                    std::size_t N, int IC, int OC, cudaStream_t stream);

// dinp[N, IC] = dout · weight (overwritten: an activation gradient; dinp may be null to skip it,
// e.g. for the first layer's input); dweight[OC, IC] += doutᵀ · inp; dbias[OC] += Σ_n dout[n, :]
// (dbias may be null), the same deterministic reduction as matmul_backward's, with scratch of
// matmul_backward_scratch_floats(N, OC) floats.
template <typename F>
void linear_backward(const BlasHandle& blas, F* dinp, F* dweight, F* dbias, const F* dout,
                     const F* inp, const F* weight, float* scratch, std::size_t N, int IC, int OC,
                     cudaStream_t stream);

// c[M, N] = alpha · op(a)[M, K] · op(b)[K, N] + beta · c, row-major with leading dimensions: the
// CPU kernels::gemm, for products the Conv1D layout cannot state (the tied LM head multiplies by
// wteᵀ) and LoRA's (alpha its scale). beta = 0 overwrites c (an activation or its gradient),
// beta = 1 adds into it (a parameter gradient). c must not alias a or b.
template <typename F>
void gemm(const BlasHandle& blas, Transpose ta, Transpose tb, std::size_t M, std::size_t N,
          std::size_t K, float alpha, const F* a, std::size_t lda, const F* b, std::size_t ldb,
          float beta, F* c, std::size_t ldc, cudaStream_t stream);

}  // namespace autotrain::kernels::gpu
#endif  // AUTOTRAIN_HAVE_CUDA
