// Matmul forward and backward through cuBLASLt, fp32 accumulation: matmul_* in the Conv1D weight
// layout [IC, OC], linear_* in the torch.nn.Linear layout [OC, IC] (the same gemms with the
// weight's transpose flag turned over).
// Invariant: parameter gradients accumulate (+=, beta = 1), activation gradients are
// overwritten (=, beta = 0).
// cuBLASLt is column-major: a row-major [R, S] matrix is the column-major [S, R] one, so each
// row-major product X = Y·Z is issued as Xᵀ = Zᵀ·Yᵀ with the operands swapped.
// The MLP's GELU rides in the epilogues when cuBLASLt has them (GELU_AUX_BIAS forward, DGELU
// backward): its input and output then never make an extra trip through memory. Otherwise (no
// algorithm, an auxiliary leading dimension that is not a multiple of 8, or
// AUTOTRAIN_CUDA_GELU_FUSION=off) the same results come from the plain gemm and the GELU kernels.
#include <cstdlib>
#include <map>
#include <string>
#include <tuple>

#include "autotrain/core/log.hpp"
#include "autotrain/kernels/gpu/cublas_check.hpp"
#include "autotrain/kernels/gpu/gelu.hpp"
#include "autotrain/kernels/gpu/matmul.hpp"
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

// What the epilogue does to the column-major product P = op(A)·op(B) + beta·C before D:
// none: D = P; bias: D = P + bias[m]; gelu_aux_bias: aux = P + bias[m], D = gelu(aux);
// dgelu: D = P ⊙ gelu'(aux) (aux read: the GELU's input saved by the forward).
enum class Epilogue { none, bias, gelu_aux_bias, dgelu };

bool fused_epilogue(Epilogue epilogue) {
  return epilogue == Epilogue::gelu_aux_bias || epilogue == Epilogue::dgelu;
}

// The epilogue's extra operands: the bias vector [m] and the auxiliary matrix [m, n] (ld ld_aux).
struct EpilogueOperands {
  const void* bias = nullptr;
  const void* aux = nullptr;
  std::int64_t ld_aux = 0;
};

// One column-major gemm D[m, n] = op(A)[m, k]·op(B)[k, n] + beta·C through an epilogue, C == D.
struct GemmShape {
  cudaDataType_t type;
  bool trans_a;
  bool trans_b;
  std::int64_t m, n, k, lda, ldb, ldc;
  Epilogue epilogue = Epilogue::none;
  // Filled in by launch_gemm: the aux leading dimension, and the alignment of each pointer, which
  // cuBLASLt's heuristic assumes for the algorithm it picks.
  std::int64_t ld_aux = 0;
  unsigned align_a = 0, align_b = 0, align_c = 0, align_bias = 0, align_aux = 0;

  auto key() const {
    return std::tie(type, trans_a, trans_b, m, n, k, lda, ldb, ldc, epilogue, ld_aux, align_a,
                    align_b, align_c, align_bias, align_aux);
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
    bool available;  // false: cuBLASLt has no algorithm for this fused epilogue
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

cublasLtEpilogue_t cublaslt_epilogue(Epilogue epilogue) {
  switch (epilogue) {
    case Epilogue::none:
      return CUBLASLT_EPILOGUE_DEFAULT;
    case Epilogue::bias:
      return CUBLASLT_EPILOGUE_BIAS;
    case Epilogue::gelu_aux_bias:
      return CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
    case Epilogue::dgelu:
      return CUBLASLT_EPILOGUE_DGELU;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

template <typename T>
void set_desc(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attribute, const T& value) {
  AT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, attribute, &value, sizeof(value)));
}

// The pointers cuBLASLt reads at call time (and whose alignment its heuristic assumes).
void set_epilogue_pointers(cublasLtMatmulDesc_t desc, Epilogue epilogue,
                           const EpilogueOperands& operands) {
  if (epilogue == Epilogue::bias || epilogue == Epilogue::gelu_aux_bias) {
    set_desc(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, operands.bias);
  }
  if (fused_epilogue(epilogue))
    set_desc(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, operands.aux);
}

BlasHandle::Plans::Plan& plan_for(const BlasHandle& blas, const GemmShape& shape,
                                  const EpilogueOperands& operands) {
  auto& plans = blas.plans().by_shape;
  if (auto found = plans.find(shape); found != plans.end()) return found->second;

  cublasLtMatmulDesc_t desc = nullptr;
  AT_CUBLAS_CHECK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  BlasHandle::Plans::Plan plan{MatmulDesc(desc), nullptr, nullptr, nullptr, {}, true};
  set_desc(desc, CUBLASLT_MATMUL_DESC_TRANSA, shape.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N);
  set_desc(desc, CUBLASLT_MATMUL_DESC_TRANSB, shape.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N);
  if (shape.epilogue != Epilogue::none) {
    set_desc(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, cublaslt_epilogue(shape.epilogue));
  }
  if (fused_epilogue(shape.epilogue)) {
    set_desc(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, shape.ld_aux);
  }
  set_epilogue_pointers(desc, shape.epilogue, operands);
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
  const cublasStatus_t status =
      cublasLtMatmulAlgoGetHeuristic(blas.get(), desc, plan.a.get(), plan.b.get(), plan.c.get(),
                                     plan.c.get(), raw_pref, 1, &result, &found);
  if (fused_epilogue(shape.epilogue) && (status != CUBLAS_STATUS_SUCCESS || found == 0)) {
    // A fused GELU is an optimisation: without an algorithm for it the caller runs the plain
    // gemm and the GELU kernel instead.
    log::info("matmul: cuBLASLt has no ",
              shape.epilogue == Epilogue::dgelu ? "DGELU" : "GELU_AUX_BIAS", " epilogue for the ",
              shape.m, "x", shape.n, "x", shape.k, " gemm; the GELU runs as its own kernel there");
    plan.available = false;
  } else {
    AT_CUBLAS_CHECK(status);
    AT_CHECK(found > 0, "cuBLASLt has no algorithm for the ", shape.m, "x", shape.n, "x", shape.k,
             " gemm (type ", static_cast<int>(shape.type), ", epilogue ",
             static_cast<int>(shape.epilogue), "); check the shapes and the buffers' alignment");
    plan.algo = result.algo;
  }
  return plans.emplace(shape, std::move(plan)).first->second;
}

// Queues the gemm; false (nothing queued) when a fused epilogue has no algorithm.
bool launch_gemm(const BlasHandle& blas, GemmShape shape, const void* a, const void* b, void* c,
                 float beta, const EpilogueOperands& operands, cudaStream_t stream,
                 float alpha = 1.0f) {
  shape.align_a = alignment_of(a);
  shape.align_b = alignment_of(b);
  shape.align_c = alignment_of(c);
  shape.ld_aux = fused_epilogue(shape.epilogue) ? operands.ld_aux : 0;
  shape.align_bias = operands.bias != nullptr ? alignment_of(operands.bias) : 0;
  shape.align_aux = fused_epilogue(shape.epilogue) ? alignment_of(operands.aux) : 0;
  auto& plan = plan_for(blas, shape, operands);
  if (!plan.available) return false;
  set_epilogue_pointers(plan.desc.get(), shape.epilogue, operands);
  const cublasStatus_t status = cublasLtMatmul(
      blas.get(), plan.desc.get(), &alpha, a, plan.a.get(), b, plan.b.get(), &beta, c, plan.c.get(),
      c, plan.c.get(), &plan.algo, blas.workspace(), blas.workspace_bytes(), stream);
  if (status != CUBLAS_STATUS_SUCCESS && fused_epilogue(shape.epilogue)) {
    // cuBLASLt checks its arguments before it queues anything: nothing ran, so the caller's
    // unfused way can still produce the result. Later calls of this shape go that way directly.
    log::info("matmul: cuBLASLt refused the ",
              shape.epilogue == Epilogue::dgelu ? "DGELU" : "GELU_AUX_BIAS", " epilogue for the ",
              shape.m, "x", shape.n, "x", shape.k, " gemm (", cublasGetStatusName(status),
              "); the GELU runs as its own kernel there");
    plan.available = false;
    return false;
  }
  AT_CUBLAS_CHECK(status);
  return true;
}

// Whether the MLP's GELU may ride in the matmul epilogues: in bf16/fp16 only (fp32 is the mode
// that matches the CPU to 1e-4, and cuBLASLt's epilogue GELU need not be our tanh formula to the
// last fp32 bit), unless AUTOTRAIN_CUDA_GELU_FUSION=off, and where cuBLASLt's rule for the
// auxiliary matrix allows it (ld a multiple of 8).
template <typename F>
bool gelu_fusion_allowed(std::int64_t ld_aux) {
  static const bool enabled = [] {
    const char* value = std::getenv("AUTOTRAIN_CUDA_GELU_FUSION");
    const std::string choice = value == nullptr ? "" : value;
    AT_CHECK(choice.empty() || choice == "on" || choice == "off", "AUTOTRAIN_CUDA_GELU_FUSION = '",
             choice, "': expected 'on' (the default: GELU in the matmul epilogues) or 'off'");
    if (choice == "off") {
      log::info("matmul: AUTOTRAIN_CUDA_GELU_FUSION=off, the GELU runs as its own kernel");
    }
    return choice != "off";
  }();
  return sizeof(F) == 2 && enabled && ld_aux % 8 == 0;
}

constexpr int kChunkRows = 128;  // rows per partial column sum
constexpr int kPartialRows = 8;  // threadIdx.y extent of the partials

// Block (32 threads of W columns each, kPartialRows) per (column tile, chunk):
// partial[chunk, o] = Σ_rows dout[:, o], thread y summing rows y, y + 8, ... then y in order.
// W = kPack<F>: 16-byte loads (OC a whole number of packs, dout aligned); W = 1 otherwise.
template <int W, typename F>
__global__ void column_partials_kernel(float* partial, const F* dout, std::size_t N, int OC) {
  __shared__ float shared[kPartialRows][kWarp * W];
  const int o = (static_cast<int>(blockIdx.x) * kWarp + static_cast<int>(threadIdx.x)) * W;
  const std::size_t first = std::size_t{blockIdx.y} * kChunkRows;
  const std::size_t last = first + kChunkRows < N ? first + kChunkRows : N;
  float sum[W] = {};
  if (o < OC) {
    for (std::size_t n = first + threadIdx.y; n < last; n += kPartialRows) {
      const auto values = load_packed<W>(dout + n * OC + o);
      for (int i = 0; i < W; ++i) sum[i] += values.get(i);
    }
  }
  for (int i = 0; i < W; ++i) shared[threadIdx.y][threadIdx.x * W + i] = sum[i];
  __syncthreads();
  if (threadIdx.y == 0 && o < OC) {
    for (int y = 1; y < kPartialRows; ++y) {
      for (int i = 0; i < W; ++i) sum[i] += shared[y][threadIdx.x * W + i];
    }
    for (int i = 0; i < W; ++i) partial[std::size_t{blockIdx.y} * OC + o + i] = sum[i];
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

// dbias[OC] += Σ_n dout[n, :] in two fixed-order stages (per-chunk partials in scratch, then the
// chunks in order): cuBLASLt's BGRAD epilogue overwrites, and parameter gradients must add.
template <typename F>
void bias_backward(F* dbias, const F* dout, float* scratch, std::size_t N, int OC,
                   cudaStream_t stream) {
  const unsigned chunks = ceil_div(N, kChunkRows);
  const auto columns = static_cast<std::size_t>(OC);
  if (rows_packable<F>(columns, dout)) {
    constexpr int W = kPack<F>;
    const dim3 grid(ceil_div(columns, kWarp * W), chunks);
    column_partials_kernel<W><<<grid, dim3(kWarp, kPartialRows), 0, stream>>>(scratch, dout, N, OC);
  } else {
    const dim3 grid(ceil_div(columns, kWarp), chunks);
    column_partials_kernel<1><<<grid, dim3(kWarp, kPartialRows), 0, stream>>>(scratch, dout, N, OC);
  }
  AT_CUDA_CHECK_LAUNCH();
  bias_accumulate_kernel<<<ceil_div(static_cast<std::size_t>(OC), kBlockThreads), kBlockThreads, 0,
                           stream>>>(dbias, scratch, chunks, OC);
  AT_CUDA_CHECK_LAUNCH();
}

// outᵀ[OC, N] = weightᵀ[OC, IC] · inpᵀ[IC, N]: weight [IC, OC] row-major is column-major [OC, IC].
template <typename F>
GemmShape forward_shape(std::int64_t n, int IC, int OC, Epilogue epilogue) {
  return GemmShape{data_type<F>(), false, false, OC, n, IC, OC, IC, OC, epilogue};
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
  launch_gemm(blas, forward_shape<F>(n, IC, OC, bias != nullptr ? Epilogue::bias : Epilogue::none),
              weight, inp, out, 0.0f, EpilogueOperands{bias}, stream);
}

template <typename F>
void matmul_gelu_forward(const BlasHandle& blas, F* out, F* pre, const F* inp, const F* weight,
                         const F* bias, std::size_t N, int IC, int OC, cudaStream_t stream) {
  if (N == 0) return;
  const auto n = static_cast<std::int64_t>(N);
  if (gelu_fusion_allowed<F>(OC) &&
      launch_gemm(blas, forward_shape<F>(n, IC, OC, Epilogue::gelu_aux_bias), weight, inp, out,
                  0.0f, EpilogueOperands{bias, pre, OC}, stream)) {
    return;
  }
  matmul_forward(blas, pre, inp, weight, bias, N, IC, OC, stream);
  gelu_forward(out, pre, N * static_cast<std::size_t>(OC), stream);
}

template <typename F>
bool matmul_gelu_may_fuse(int OC) {
  return gelu_fusion_allowed<F>(OC);
}

template <typename F>
void matmul_backward(const BlasHandle& blas, F* dinp, F* dweight, F* dbias, const F* dout,
                     const F* inp, const F* weight, float* scratch, std::size_t N, int IC, int OC,
                     cudaStream_t stream, const F* gelu_pre) {
  if (N == 0) return;
  const auto n = static_cast<std::int64_t>(N);
  // dinpᵀ[IC, N] = weight[IC, OC] · doutᵀ[OC, N]: weight is stored column-major as [OC, IC].
  // With gelu_pre, the DGELU epilogue turns it into the gradient of the GELU's input.
  const GemmShape dinp_shape{data_type<F>(), true, false, IC, n, OC, OC, OC, IC, Epilogue::none};
  GemmShape dgelu_shape = dinp_shape;
  dgelu_shape.epilogue = Epilogue::dgelu;
  const bool fused = gelu_pre != nullptr && gelu_fusion_allowed<F>(IC) &&
                     launch_gemm(blas, dgelu_shape, weight, dout, dinp, 0.0f,
                                 EpilogueOperands{nullptr, gelu_pre, IC}, stream);
  if (!fused) {
    launch_gemm(blas, dinp_shape, weight, dout, dinp, 0.0f, EpilogueOperands{}, stream);
    if (gelu_pre != nullptr) {
      gelu_backward(dinp, gelu_pre, dinp, N * static_cast<std::size_t>(IC), stream);
    }
  }
  // dweightᵀ[OC, IC] += doutᵀ[OC, N] · inp[N, IC]: inp is stored column-major as [IC, N].
  launch_gemm(blas, GemmShape{data_type<F>(), false, true, OC, IC, n, OC, IC, OC, Epilogue::none},
              dout, inp, dweight, 1.0f, EpilogueOperands{}, stream);
  if (dbias != nullptr) bias_backward(dbias, dout, scratch, N, OC, stream);
}

template <typename F>
void linear_forward(const BlasHandle& blas, F* out, const F* inp, const F* weight, const F* bias,
                    std::size_t N, int IC, int OC, cudaStream_t stream) {
  if (N == 0) return;
  const auto n = static_cast<std::int64_t>(N);
  // outᵀ[OC, N] = weight[OC, IC] · inpᵀ[IC, N] (+ bias down the OC rows): weight [OC, IC]
  // row-major is column-major [IC, OC], so op(A) = T.
  launch_gemm(blas,
              GemmShape{data_type<F>(), true, false, OC, n, IC, IC, IC, OC,
                        bias != nullptr ? Epilogue::bias : Epilogue::none},
              weight, inp, out, 0.0f, EpilogueOperands{bias}, stream);
}

template <typename F>
void linear_backward(const BlasHandle& blas, F* dinp, F* dweight, F* dbias, const F* dout,
                     const F* inp, const F* weight, float* scratch, std::size_t N, int IC, int OC,
                     cudaStream_t stream) {
  if (N == 0) return;
  const auto n = static_cast<std::int64_t>(N);
  if (dinp != nullptr) {
    // dinpᵀ[IC, N] = weightᵀ[IC, OC] · doutᵀ[OC, N]: weight is stored column-major as [IC, OC].
    launch_gemm(blas,
                GemmShape{data_type<F>(), false, false, IC, n, OC, IC, OC, IC, Epilogue::none},
                weight, dout, dinp, 0.0f, EpilogueOperands{}, stream);
  }
  // dweightᵀ[IC, OC] += inpᵀ[IC, N] · dout[N, OC]: inp is stored column-major as [IC, N], dout as
  // [OC, N] (op(B) = T).
  launch_gemm(blas, GemmShape{data_type<F>(), false, true, IC, OC, n, IC, OC, IC, Epilogue::none},
              inp, dout, dweight, 1.0f, EpilogueOperands{}, stream);
  if (dbias != nullptr) bias_backward(dbias, dout, scratch, N, OC, stream);
}

template <typename F>
void gemm(const BlasHandle& blas, Transpose ta, Transpose tb, std::size_t M, std::size_t N,
          std::size_t K, float alpha, const F* a, std::size_t lda, const F* b, std::size_t ldb,
          float beta, F* c, std::size_t ldc, cudaStream_t stream) {
  if (M == 0 || N == 0) return;
  const auto i64 = [](std::size_t x) { return static_cast<std::int64_t>(x); };
  // cᵀ[N, M] = op(b)ᵀ[N, K] · op(a)ᵀ[K, M]: a row-major operand is its column-major transpose,
  // so b goes first with b's transpose flag, then a with a's.
  launch_gemm(blas,
              GemmShape{data_type<F>(), tb == Transpose::yes, ta == Transpose::yes, i64(N), i64(M),
                        i64(K), i64(ldb), i64(lda), i64(ldc), Epilogue::none},
              b, a, c, beta, EpilogueOperands{}, stream, alpha);
}

#define AT_MATMUL(F)                                                                             \
  template void matmul_forward<F>(const BlasHandle&, F*, const F*, const F*, const F*,           \
                                  std::size_t, int, int, cudaStream_t);                          \
  template void matmul_gelu_forward<F>(const BlasHandle&, F*, F*, const F*, const F*, const F*,  \
                                       std::size_t, int, int, cudaStream_t);                     \
  template bool matmul_gelu_may_fuse<F>(int);                                                    \
  template void matmul_backward<F>(const BlasHandle&, F*, F*, F*, const F*, const F*, const F*,  \
                                   float*, std::size_t, int, int, cudaStream_t, const F*);       \
  template void linear_forward<F>(const BlasHandle&, F*, const F*, const F*, const F*,           \
                                  std::size_t, int, int, cudaStream_t);                          \
  template void linear_backward<F>(const BlasHandle&, F*, F*, F*, const F*, const F*, const F*,  \
                                   float*, std::size_t, int, int, cudaStream_t);                 \
  template void gemm<F>(const BlasHandle&, Transpose, Transpose, std::size_t, std::size_t,       \
                        std::size_t, float, const F*, std::size_t, const F*, std::size_t, float, \
                        F*, std::size_t, cudaStream_t);
AT_GPU_INSTANTIATE(AT_MATMUL)

}  // namespace autotrain::kernels::gpu
