// Matmul forward and backward through cuBLASLt, Conv1D weight layout [IC, OC], fp32 accumulation.
// Invariant: parameter gradients accumulate (+=, beta = 1), activation gradients are
// overwritten (=, beta = 0).
// cuBLASLt is column-major: a row-major [R, S] matrix is the column-major [S, R] one, so each
// row-major product X = Y·Z is issued as Xᵀ = Zᵀ·Yᵀ with the operands swapped.
#include <map>
#include <tuple>

#include "autotrain/kernels/cuda/matmul.hpp"
#include "common.cuh"

namespace autotrain::kernels::gpu {
namespace {

// Largest power of two (at most 256) dividing the address: what cuBLASLt may assume.
unsigned alignment_of(const void* pointer) {
  const auto address = reinterpret_cast<std::uintptr_t>(pointer);
  unsigned alignment = 256;
  while (alignment > 1 && address % alignment != 0) alignment /= 2;
  return alignment;
}

struct DescDeleter {
  void operator()(cublasLtMatmulDescOpaque_t* desc) const { cublasLtMatmulDescDestroy(desc); }
};
struct LayoutDeleter {
  void operator()(cublasLtMatrixLayoutOpaque_t* layout) const {
    cublasLtMatrixLayoutDestroy(layout);
  }
};
struct PreferenceDeleter {
  void operator()(cublasLtMatmulPreferenceOpaque_t* pref) const {
    cublasLtMatmulPreferenceDestroy(pref);
  }
};
using MatmulDesc = std::unique_ptr<cublasLtMatmulDescOpaque_t, DescDeleter>;
using MatrixLayout = std::unique_ptr<cublasLtMatrixLayoutOpaque_t, LayoutDeleter>;
using Preference = std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, PreferenceDeleter>;

// One column-major gemm D[m, n] = op(A)[m, k]·op(B)[k, n] + beta·C (+ bias[m]), C == D.
struct GemmShape {
  cudaDataType_t type;
  bool trans_a;
  bool trans_b;
  std::int64_t m, n, k, lda, ldb, ldc;
  bool bias;
  unsigned align_a, align_b, align_c;

  auto key() const {
    return std::tie(type, trans_a, trans_b, m, n, k, lda, ldb, ldc, bias, align_a, align_b,
                    align_c);
  }
  bool operator<(const GemmShape& other) const { return key() < other.key(); }
};

MatrixLayout make_layout(cudaDataType_t type, std::int64_t rows, std::int64_t cols,
                         std::int64_t ld) {
  cublasLtMatrixLayout_t layout = nullptr;
  AT_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&layout, type, static_cast<std::uint64_t>(rows),
                                             static_cast<std::uint64_t>(cols), ld));
  return MatrixLayout(layout);
}

}  // namespace

struct BlasHandle::Plans {
  struct Plan {
    MatmulDesc desc;
    MatrixLayout a, b, c;
    cublasLtMatmulAlgo_t algo;
  };
  std::map<GemmShape, Plan> by_shape;
};

BlasHandle::BlasHandle(std::size_t workspace_bytes)
    : workspace_(workspace_bytes), plans_(std::make_unique<Plans>()) {
  AT_CUBLAS_CHECK(cublasLtCreate(&handle_));
}

BlasHandle::~BlasHandle() {
  plans_.reset();  // descriptors before the handle
  if (handle_ != nullptr) cublasLtDestroy(handle_);
}

namespace {

const BlasHandle::Plans::Plan& plan_for(const BlasHandle& blas, const GemmShape& shape) {
  auto& plans = blas.plans().by_shape;
  if (auto found = plans.find(shape); found != plans.end()) return found->second;

  cublasLtMatmulDesc_t desc = nullptr;
  AT_CUBLAS_CHECK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  BlasHandle::Plans::Plan plan{MatmulDesc(desc), nullptr, nullptr, nullptr, {}};
  const cublasOperation_t op_a = shape.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = shape.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  AT_CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof(op_a)));
  AT_CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof(op_b)));
  if (shape.bias) {
    const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    AT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                                   sizeof(epilogue)));
  }
  // Stored shapes: op(A) is m×k, so A itself is k×m when transposed; likewise B.
  plan.a = shape.trans_a ? make_layout(shape.type, shape.k, shape.m, shape.lda)
                         : make_layout(shape.type, shape.m, shape.k, shape.lda);
  plan.b = shape.trans_b ? make_layout(shape.type, shape.n, shape.k, shape.ldb)
                         : make_layout(shape.type, shape.k, shape.n, shape.ldb);
  plan.c = make_layout(shape.type, shape.m, shape.n, shape.ldc);

  cublasLtMatmulPreference_t raw_pref = nullptr;
  AT_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&raw_pref));
  const Preference pref(raw_pref);
  const std::size_t workspace = blas.workspace_bytes();
  AT_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      raw_pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof(workspace)));
  const std::uint32_t aligns[3] = {shape.align_a, shape.align_b, shape.align_c};
  const cublasLtMatmulPreferenceAttributes_t align_attrs[3] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES};
  for (int i = 0; i < 3; ++i) {
    AT_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(raw_pref, align_attrs[i], &aligns[i],
                                                         sizeof(aligns[i])));
  }
  AT_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      raw_pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &aligns[2], sizeof(aligns[2])));

  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  AT_CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(blas.get(), desc, plan.a.get(), plan.b.get(),
                                                 plan.c.get(), plan.c.get(), raw_pref, 1, &result,
                                                 &found));
  AT_CHECK(found > 0, "cuBLASLt has no algorithm for the ", shape.m, "x", shape.n, "x", shape.k,
           " gemm (type ", static_cast<int>(shape.type), ", bias ", shape.bias,
           "); check the shapes and the buffers' alignment");
  plan.algo = result.algo;
  return plans.emplace(shape, std::move(plan)).first->second;
}

void launch_gemm(const BlasHandle& blas, GemmShape shape, const void* a, const void* b, void* c,
                 float beta, const void* bias, cudaStream_t stream) {
  shape.bias = bias != nullptr;
  shape.align_a = alignment_of(a);
  shape.align_b = alignment_of(b);
  shape.align_c = alignment_of(c);
  const auto& plan = plan_for(blas, shape);
  if (bias != nullptr) {
    AT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
        plan.desc.get(), CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
  }
  const float alpha = 1.0f;
  AT_CUBLAS_CHECK(cublasLtMatmul(blas.get(), plan.desc.get(), &alpha, a, plan.a.get(), b,
                                 plan.b.get(), &beta, c, plan.c.get(), c, plan.c.get(), &plan.algo,
                                 blas.workspace(), blas.workspace_bytes(), stream));
}

constexpr int kChunkRows = 256;  // rows per partial column sum
constexpr int kPartialRows = 8;  // threadIdx.y extent of the partials

// Block (32 columns, kPartialRows) per (column tile, chunk): partial[chunk, o] = Σ_rows dout[:, o].
template <typename F>
__global__ void column_partials_kernel(float* partial, const F* dout, std::size_t N, int OC) {
  __shared__ float shared[kPartialRows][kWarp];
  const int o = static_cast<int>(blockIdx.x) * kWarp + static_cast<int>(threadIdx.x);
  const std::size_t first = std::size_t{blockIdx.y} * kChunkRows;
  const std::size_t last = first + kChunkRows < N ? first + kChunkRows : N;
  float sum = 0.0f;
  if (o < OC) {
    for (std::size_t n = first + threadIdx.y; n < last; n += kPartialRows) {
      sum += to_float(dout[n * OC + o]);
    }
  }
  shared[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y == 0 && o < OC) {
    for (int y = 1; y < kPartialRows; ++y) sum += shared[y][threadIdx.x];
    partial[std::size_t{blockIdx.y} * OC + o] = sum;
  }
}

template <typename F>
__global__ void bias_accumulate_kernel(F* dbias, const float* partial, unsigned chunks, int OC) {
  const int o = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (o >= OC) return;
  float sum = 0.0f;
  for (unsigned chunk = 0; chunk < chunks; ++chunk) sum += partial[std::size_t{chunk} * OC + o];
  dbias[o] = from_float<F>(to_float(dbias[o]) + sum);
}

}  // namespace

std::size_t matmul_backward_scratch_floats(std::size_t N, int OC) {
  return std::size_t{ceil_div(N, kChunkRows)} * static_cast<std::size_t>(OC);
}

template <typename F>
void matmul_forward(const BlasHandle& blas, F* out, const F* inp, const F* weight, const F* bias,
                    std::size_t N, int IC, int OC, cudaStream_t stream) {
  if (N == 0) return;
  const auto n = static_cast<std::int64_t>(N);
  // outᵀ[OC, N] = weightᵀ[OC, IC] · inpᵀ[IC, N] (+ bias down the OC rows)
  launch_gemm(blas, GemmShape{data_type<F>(), false, false, OC, n, IC, OC, IC, OC, false, 0, 0, 0},
              weight, inp, out, 0.0f, bias, stream);
}

template <typename F>
void matmul_backward(const BlasHandle& blas, F* dinp, F* dweight, F* dbias, const F* dout,
                     const F* inp, const F* weight, float* scratch, std::size_t N, int IC, int OC,
                     cudaStream_t stream) {
  if (N == 0) return;
  const auto n = static_cast<std::int64_t>(N);
  // dinpᵀ[IC, N] = weight[IC, OC] · doutᵀ[OC, N]: weight is stored column-major as [OC, IC].
  launch_gemm(blas, GemmShape{data_type<F>(), true, false, IC, n, OC, OC, OC, IC, false, 0, 0, 0},
              weight, dout, dinp, 0.0f, nullptr, stream);
  // dweightᵀ[OC, IC] += doutᵀ[OC, N] · inp[N, IC]: inp is stored column-major as [IC, N].
  launch_gemm(blas, GemmShape{data_type<F>(), false, true, OC, IC, n, OC, IC, OC, false, 0, 0, 0},
              dout, inp, dweight, 1.0f, nullptr, stream);
  if (dbias != nullptr) {
    const unsigned chunks = ceil_div(N, kChunkRows);
    const dim3 grid(ceil_div(static_cast<std::size_t>(OC), kWarp), chunks);
    column_partials_kernel<<<grid, dim3(kWarp, kPartialRows), 0, stream>>>(scratch, dout, N, OC);
    AT_CUDA_CHECK_LAUNCH();
    bias_accumulate_kernel<<<ceil_div(static_cast<std::size_t>(OC), kBlockThreads), kBlockThreads,
                             0, stream>>>(dbias, scratch, chunks, OC);
    AT_CUDA_CHECK_LAUNCH();
  }
}

template <typename F>
void gemm(const BlasHandle& blas, Transpose ta, Transpose tb, std::size_t M, std::size_t N,
          std::size_t K, const F* a, std::size_t lda, const F* b, std::size_t ldb, float beta, F* c,
          std::size_t ldc, cudaStream_t stream) {
  if (M == 0 || N == 0) return;
  const auto i64 = [](std::size_t x) { return static_cast<std::int64_t>(x); };
  // cᵀ[N, M] = op(b)ᵀ[N, K] · op(a)ᵀ[K, M]: a row-major operand is its column-major transpose,
  // so b goes first with b's transpose flag, then a with a's.
  launch_gemm(blas,
              GemmShape{data_type<F>(), tb == Transpose::yes, ta == Transpose::yes, i64(N), i64(M),
                        i64(K), i64(ldb), i64(lda), i64(ldc), false, 0, 0, 0},
              b, a, c, beta, nullptr, stream);
}

#define AT_MATMUL(F)                                                                            \
  template void matmul_forward<F>(const BlasHandle&, F*, const F*, const F*, const F*,          \
                                  std::size_t, int, int, cudaStream_t);                         \
  template void matmul_backward<F>(const BlasHandle&, F*, F*, F*, const F*, const F*, const F*, \
                                   float*, std::size_t, int, int, cudaStream_t);                \
  template void gemm<F>(const BlasHandle&, Transpose, Transpose, std::size_t, std::size_t,      \
                        std::size_t, const F*, std::size_t, const F*, std::size_t, float, F*,   \
                        std::size_t, cudaStream_t);
AT_GPU_INSTANTIATE(AT_MATMUL)

}  // namespace autotrain::kernels::gpu
