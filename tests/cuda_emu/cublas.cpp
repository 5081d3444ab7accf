// The CUDA emulator's cuBLAS and cuBLASLt: the calls autotrain makes (src/kernels/gpu/matmul.cu,
// attention.cu), computed on the CPU.
//
// Each product is checked when it is called (handles, descriptors, shapes, types, device memory,
// the alignment its algorithm was chosen for) and its arithmetic is queued on the stream, so it
// runs in stream order with the emulated kernels. The arithmetic is cuBLAS's, column-major:
//   D (m×n, ldd) = alpha · op(A) (m×k) · op(B) (k×n) + beta · C (m×n, ldc) [+ bias (m), per column]
// each dot product accumulated in float in k order, rounded once to D's type; beta == 0 means C
// is not read, alpha == 0 means A and B are not read. The GELU epilogues (GELU_AUX_BIAS, DGELU)
// apply GPT-2's tanh GELU to that fp32 value, with cuBLASLt's rules for the aux matrix. Anything
// else the libraries offer (other epilogues, compute types, layout orders, device pointer mode,
// batched layouts) stops the process with a "cuda-emu:" message rather than computing something
// different.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>

#include "emulator.hpp"

// The opaque handle types the headers declare.
struct cublasLtContext {
  std::uint32_t magic;
};
struct cublasContext {
  std::uint32_t magic;
  cudaStream_t stream;  // nullptr: the legacy stream
  void* workspace;      // nullptr: cuBLAS's own pool (the emulator needs none)
  std::size_t workspace_bytes;
};

namespace {

template <typename... Parts>
std::string cat(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}

[[noreturn]] void fail(const char* api, const std::string& message) {
  cuda_emu::fail(cat("cuda-emu: ", api, ": ", message));
}

// Distinct tags in the first word of every object this file hands out, so that a stale, foreign
// or uninitialized handle or descriptor is caught instead of read as garbage.
constexpr std::uint32_t kLtHandleMagic = 0x4c544831;    // "LTH1"
constexpr std::uint32_t kHandleMagic = 0x424c4831;      // "BLH1"
constexpr std::uint32_t kDescMagic = 0x44455343;        // "DESC"
constexpr std::uint32_t kLayoutMagic = 0x4c41594f;      // "LAYO"
constexpr std::uint32_t kPreferenceMagic = 0x50524546;  // "PREF"
constexpr std::uint32_t kAlgoMagic = 0x414c474f;        // "ALGO"

// cuBLASLt's descriptors are header structs of raw words (data[]): their state lives in those
// bytes, copied in and out whole.
struct DescState {
  std::uint32_t magic;
  cublasOperation_t trans_a;
  cublasOperation_t trans_b;
  cublasLtEpilogue_t epilogue;
  std::int32_t bias_type;  // -1: D's type, as in cuBLASLt
  const void* bias;
  const void* aux;      // CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER (the GELU's input)
  std::int64_t aux_ld;  // CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, in elements
};
struct LayoutState {
  std::uint32_t magic;
  cudaDataType_t type;
  std::uint64_t rows;
  std::uint64_t cols;
  std::int64_t ld;
};
struct PreferenceState {
  std::uint32_t magic;
  std::uint32_t align_a, align_b, align_c, align_d;  // bytes; 256 by default
  std::uint64_t max_workspace_bytes;
};
// What an algorithm from the heuristic promises: it needs no workspace, and the operands it was
// chosen for are aligned at least this much.
struct AlgoState {
  std::uint32_t magic;
  std::uint32_t align_a, align_b, align_c, align_d;
  std::uint32_t align_aux;  // of the epilogue's aux pointer when the heuristic saw it; 0: none
};

template <typename State, typename Opaque>
void store(Opaque* opaque, const State& state) {
  static_assert(std::is_trivially_copyable_v<State>);
  static_assert(sizeof(State) <= sizeof(opaque->data));
  std::memcpy(opaque->data, &state, sizeof(State));
}

template <typename State, typename Opaque>
State load(const Opaque* opaque, std::uint32_t magic, const char* api, const char* what) {
  if (opaque == nullptr) fail(api, cat(what, " is null"));
  State state{};
  std::memcpy(&state, opaque->data, sizeof(State));
  if (state.magic != magic) {
    fail(api, cat(what, " was not made by its Create function, or was destroyed"));
  }
  return state;
}

std::string type_name(cudaDataType_t type) {
  switch (type) {
    case CUDA_R_32F:
      return "CUDA_R_32F";
    case CUDA_R_16BF:
      return "CUDA_R_16BF";
    case CUDA_R_16F:
      return "CUDA_R_16F";
    default:
      return cat("cudaDataType ", static_cast<int>(type));
  }
}

bool is_emulated_type(cudaDataType_t type) {
  return type == CUDA_R_32F || type == CUDA_R_16BF || type == CUDA_R_16F;
}

void check_emulated_type(cudaDataType_t type, const char* api, const char* what) {
  if (!is_emulated_type(type)) {
    fail(api, cat(what, " has type ", type_name(type),
                  "; the emulator does CUDA_R_32F, CUDA_R_16BF and CUDA_R_16F only"));
  }
}

// cuBLAS with CUBLAS_COMPUTE_32F takes A and B of one type, and C/D of that type or fp32.
void check_type_pair(cudaDataType_t in, cudaDataType_t out, const char* api) {
  check_emulated_type(in, api, "A/B");
  check_emulated_type(out, api, "C/D");
  if (out != in && out != CUDA_R_32F) {
    fail(api, cat("A/B of type ", type_name(in), " with C/D of type ", type_name(out),
                  " is not a CUBLAS_COMPUTE_32F combination (C/D must match A/B or be fp32)"));
  }
}

// Whether op transposes; CUBLAS_OP_C is CUBLAS_OP_T for real types.
bool transposes(cublasOperation_t op, const char* api, const char* what) {
  switch (op) {
    case CUBLAS_OP_N:
      return false;
    case CUBLAS_OP_T:
    case CUBLAS_OP_C:
      return true;
    default:
      fail(api, cat(what, " is cublasOperation_t ", static_cast<int>(op),
                    "; only CUBLAS_OP_N, CUBLAS_OP_T and CUBLAS_OP_C exist for real types"));
  }
}

// Alpha and beta are read on the host at call time (pointer mode host, the default).
float host_scalar(const void* scalar, const char* api, const char* what) {
  if (scalar == nullptr) fail(api, cat(what, " is null"));
  if (cuda_emu::is_device(scalar, sizeof(float))) {
    fail(api, cat(what, " points to device memory, but the pointer mode is host"));
  }
  float value = 0.0f;
  std::memcpy(&value, scalar, sizeof(value));
  return value;
}

std::uintptr_t address(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p);
}

// ---- arithmetic ----------------------------------------------------------------------------

// One strided-batched column-major product with everything the queued op needs, captured at
// call time: later changes to descriptors or to alpha/beta's host memory do not affect it.
// Strides and leading dimensions are in elements.
struct Gemm {
  const char* api;
  bool trans_a, trans_b;
  std::int64_t m, n, k, batch;
  float alpha, beta;
  cudaDataType_t in_type;   // A and B
  cudaDataType_t out_type;  // C, D and the bias
  const void* a;
  std::int64_t lda, stride_a;
  const void* b;
  std::int64_t ldb, stride_b;
  const void* c;
  std::int64_t ldc, stride_c;
  void* d;
  std::int64_t ldd, stride_d;
  const void* bias;  // nullptr: no bias epilogue; else m elements
  // GELU epilogues (aux has D's type, column-major m×n with leading dimension aux_ld):
  // gelu_aux: aux = the value before the GELU (after the bias), D = gelu(value);
  // dgelu: D = value · gelu'(aux).
  bool gelu_aux, dgelu;
  void* aux;
  std::int64_t aux_ld;
};

float to_float(float x) {
  return x;
}
float to_float(__nv_bfloat16 x) {
  return __bfloat162float(x);
}
float to_float(__half x) {
  return __half2float(x);
}

template <typename T>
T from_float(float x) {
  if constexpr (std::is_same_v<T, float>) {
    return x;
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __float2bfloat16_rn(x);
  } else {
    static_assert(std::is_same_v<T, __half>);
    return __float2half_rn(x);
  }
}

// GELU with the tanh approximation (GPT-2's), and its derivative, in fp32.
float gelu(float x) {
  return 0.5f * x * (1.0f + std::tanh(0.7978845608f * (x + 0.044715f * x * x * x)));
}
float gelu_grad(float x) {
  const float th = std::tanh(0.7978845608f * (x + 0.044715f * x * x * x));
  return 0.5f * (1.0f + th) +
         0.5f * x * (1.0f - th * th) * 0.7978845608f * (1.0f + 3.0f * 0.044715f * x * x);
}

template <typename In, typename Out>
void multiply(const Gemm& g) {
  const auto* a = static_cast<const In*>(g.a);
  const auto* b = static_cast<const In*>(g.b);
  const auto* c = static_cast<const Out*>(g.c);
  const auto* bias = static_cast<const Out*>(g.bias);
  auto* d = static_cast<Out*>(g.d);
  auto* aux = static_cast<Out*>(g.aux);
  const bool reads_ab = g.alpha != 0.0f;
  const bool reads_c = g.beta != 0.0f;
  for (std::int64_t batch = 0; batch < g.batch; ++batch) {
    const std::int64_t a0 = batch * g.stride_a, b0 = batch * g.stride_b;
    const std::int64_t c0 = batch * g.stride_c, d0 = batch * g.stride_d;
    for (std::int64_t j = 0; j < g.n; ++j) {
      for (std::int64_t i = 0; i < g.m; ++i) {
        float sum = 0.0f;  // op(A)[i, :] · op(B)[:, j]
        if (reads_ab) {
          for (std::int64_t p = 0; p < g.k; ++p) {
            const In a_ip = a[a0 + (g.trans_a ? i * g.lda + p : p * g.lda + i)];
            const In b_pj = b[b0 + (g.trans_b ? p * g.ldb + j : j * g.ldb + p)];
            sum += to_float(a_ip) * to_float(b_pj);
          }
        }
        float value = g.alpha * sum;
        if (reads_c) value += g.beta * to_float(c[c0 + j * g.ldc + i]);
        if (bias != nullptr) value += to_float(bias[i]);
        if (g.gelu_aux) {
          aux[j * g.aux_ld + i] = from_float<Out>(value);
          value = gelu(value);
        } else if (g.dgelu) {
          value *= gelu_grad(to_float(aux[j * g.aux_ld + i]));
        }
        d[d0 + j * g.ldd + i] = from_float<Out>(value);
      }
    }
  }
}

template <typename In>
void multiply_into(const Gemm& g) {
  switch (g.out_type) {
    case CUDA_R_32F:
      return multiply<In, float>(g);
    case CUDA_R_16BF:
      return multiply<In, __nv_bfloat16>(g);
    case CUDA_R_16F:
      return multiply<In, __half>(g);
    default:
      fail(g.api, cat("C/D type ", type_name(g.out_type), " reached the arithmetic"));
  }
}

void multiply(const Gemm& g) {
  switch (g.in_type) {
    case CUDA_R_32F:
      return multiply_into<float>(g);
    case CUDA_R_16BF:
      return multiply_into<__nv_bfloat16>(g);
    case CUDA_R_16F:
      return multiply_into<__half>(g);
    default:
      fail(g.api, cat("A/B type ", type_name(g.in_type), " reached the arithmetic"));
  }
}

// Bytes from the first to past the last element of a strided batch of rows×cols matrices.
std::size_t span_bytes(std::int64_t rows, std::int64_t cols, std::int64_t ld, std::int64_t stride,
                       std::int64_t batch, cudaDataType_t type) {
  if (rows == 0 || cols == 0 || batch == 0) return 0;
  const std::int64_t elements = (batch - 1) * stride + (cols - 1) * ld + rows;
  return static_cast<std::size_t>(elements) * cuda_emu::element_size(type);
}

bool overlap(const void* p, std::size_t p_bytes, const void* q, std::size_t q_bytes) {
  if (p_bytes == 0 || q_bytes == 0) return false;
  return address(p) < address(q) + q_bytes && address(q) < address(p) + p_bytes;
}

// Checks the product's arguments and memory now, queues its arithmetic on stream.
void check_and_queue(const Gemm& g, cudaStream_t stream) {
  const char* api = g.api;
  if (g.m < 0 || g.n < 0 || g.k < 0 || g.batch < 0) {
    fail(api, cat("negative size m=", g.m, " n=", g.n, " k=", g.k, " batch=", g.batch));
  }
  check_type_pair(g.in_type, g.out_type, api);
  // Stored shapes: A is m×k, or k×m when transposed; B is k×n, or n×k.
  const std::int64_t rows_a = g.trans_a ? g.k : g.m, cols_a = g.trans_a ? g.m : g.k;
  const std::int64_t rows_b = g.trans_b ? g.n : g.k, cols_b = g.trans_b ? g.k : g.n;
  const struct {
    const char* name;
    std::int64_t ld, rows;
  } lds[] = {{"A", g.lda, rows_a}, {"B", g.ldb, rows_b}, {"C", g.ldc, g.m}, {"D", g.ldd, g.m}};
  for (const auto& ld : lds) {
    if (ld.ld < std::max<std::int64_t>(1, ld.rows)) {
      fail(api, cat("the leading dimension of ", ld.name, " is ", ld.ld, ", below its ", ld.rows,
                    " rows (column-major)"));
    }
  }
  if (g.stride_a < 0 || g.stride_b < 0 || g.stride_c < 0 || g.stride_d < 0) {
    fail(api, "negative batch stride");
  }
  if (g.m == 0 || g.n == 0 || g.batch == 0) return;  // nothing to write

  const bool reads_ab = g.alpha != 0.0f && g.k > 0;
  const std::size_t a_bytes =
      reads_ab ? span_bytes(rows_a, cols_a, g.lda, g.stride_a, g.batch, g.in_type) : 0;
  const std::size_t b_bytes =
      reads_ab ? span_bytes(rows_b, cols_b, g.ldb, g.stride_b, g.batch, g.in_type) : 0;
  const std::size_t c_bytes =
      g.beta != 0.0f ? span_bytes(g.m, g.n, g.ldc, g.stride_c, g.batch, g.out_type) : 0;
  const std::size_t d_bytes = span_bytes(g.m, g.n, g.ldd, g.stride_d, g.batch, g.out_type);
  const std::string prefix = cat(api, " ");
  if (a_bytes > 0) cuda_emu::require_device(g.a, a_bytes, prefix + "A");
  if (b_bytes > 0) cuda_emu::require_device(g.b, b_bytes, prefix + "B");
  if (c_bytes > 0) cuda_emu::require_device(g.c, c_bytes, prefix + "C");
  cuda_emu::require_device(g.d, d_bytes, prefix + "D");
  if (g.bias != nullptr) {
    cuda_emu::require_device(g.bias,
                             static_cast<std::size_t>(g.m) * cuda_emu::element_size(g.out_type),
                             prefix + "bias");
  }
  const std::size_t aux_bytes =
      g.aux != nullptr ? span_bytes(g.m, g.n, g.aux_ld, 0, 1, g.out_type) : 0;
  if (g.aux != nullptr) cuda_emu::require_device(g.aux, aux_bytes, prefix + "epilogue aux");
  if (overlap(g.d, d_bytes, g.aux, aux_bytes)) fail(api, "D overlaps the epilogue's aux matrix");
  // D is written while A and B are read: cuBLAS has no in-place product (C may be D).
  if (overlap(g.d, d_bytes, g.a, a_bytes)) fail(api, "D overlaps A");
  if (overlap(g.d, d_bytes, g.b, b_bytes)) fail(api, "D overlaps B");
  if (g.c != g.d && overlap(g.d, d_bytes, g.c, c_bytes)) fail(api, "D overlaps C without being C");
  if (g.c == g.d && g.ldc != g.ldd && c_bytes > 0) {
    fail(api, cat("C is D (in place) but their leading dimensions differ (", g.ldc, " and ", g.ldd,
                  ")"));
  }
  cuda_emu::enqueue(
      stream, [g] { multiply(g); }, api);
}

// ---- cuBLASLt descriptors --------------------------------------------------------------------

// An attribute's value, after checking the caller passed exactly its size.
template <typename T>
T attribute(const void* buf, std::size_t size, const char* api, const char* name) {
  if (buf == nullptr) fail(api, cat(name, ": the value pointer is null"));
  if (size != sizeof(T)) {
    fail(api, cat(name, " takes ", sizeof(T), " bytes, got ", size));
  }
  T value;
  std::memcpy(&value, buf, sizeof(T));
  return value;
}

bool is_gelu_epilogue(cublasLtEpilogue_t epilogue) {
  return epilogue == CUBLASLT_EPILOGUE_GELU_AUX_BIAS || epilogue == CUBLASLT_EPILOGUE_DGELU;
}

// Whether AUTOTRAIN_CUDA_EMU_LT_EPILOGUES (a test switch) is `value`.
bool gelu_epilogues_are(std::string_view value) {
  const char* setting = std::getenv("AUTOTRAIN_CUDA_EMU_LT_EPILOGUES");
  return setting != nullptr && std::string_view(setting) == value;
}

// m, n, k and the types of one cuBLASLt product, from its descriptor and layouts.
struct LtShape {
  std::int64_t m, n, k;
  LayoutState a, b, c, d;
  DescState desc;
};

LtShape lt_shape(cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a_layout,
                 cublasLtMatrixLayout_t b_layout, cublasLtMatrixLayout_t c_layout,
                 cublasLtMatrixLayout_t d_layout, const char* api) {
  LtShape s{};
  s.desc = load<DescState>(desc, kDescMagic, api, "the matmul descriptor");
  s.a = load<LayoutState>(a_layout, kLayoutMagic, api, "the layout of A");
  s.b = load<LayoutState>(b_layout, kLayoutMagic, api, "the layout of B");
  s.c = load<LayoutState>(c_layout, kLayoutMagic, api, "the layout of C");
  s.d = load<LayoutState>(d_layout, kLayoutMagic, api, "the layout of D");
  const bool trans_a = transposes(s.desc.trans_a, api, "CUBLASLT_MATMUL_DESC_TRANSA");
  const bool trans_b = transposes(s.desc.trans_b, api, "CUBLASLT_MATMUL_DESC_TRANSB");
  // op(A) is m×k, op(B) is k×n, C and D are m×n.
  const auto m = static_cast<std::int64_t>(trans_a ? s.a.cols : s.a.rows);
  const auto k = static_cast<std::int64_t>(trans_a ? s.a.rows : s.a.cols);
  const auto k_b = static_cast<std::int64_t>(trans_b ? s.b.cols : s.b.rows);
  const auto n = static_cast<std::int64_t>(trans_b ? s.b.rows : s.b.cols);
  if (k_b != k) {
    fail(api, cat("op(A) is ", m, "x", k, " but op(B) is ", k_b, "x", n, " (inner sizes differ)"));
  }
  for (const auto& [name, layout] : {std::pair{"C", &s.c}, std::pair{"D", &s.d}}) {
    if (static_cast<std::int64_t>(layout->rows) != m ||
        static_cast<std::int64_t>(layout->cols) != n) {
      fail(api,
           cat(name, " is ", layout->rows, "x", layout->cols, " but op(A)·op(B) is ", m, "x", n));
    }
  }
  if (s.a.type != s.b.type) {
    fail(api, cat("A has type ", type_name(s.a.type), " but B has ", type_name(s.b.type)));
  }
  if (s.c.type != s.d.type) {
    fail(api, cat("C has type ", type_name(s.c.type), " but D has ", type_name(s.d.type)));
  }
  check_type_pair(s.a.type, s.d.type, api);
  if (is_gelu_epilogue(s.desc.epilogue)) {
    // cuBLASLt's rules for the GELU input matrix (CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD).
    if (s.desc.aux_ld % 8 != 0 || s.desc.aux_ld < m) {
      fail(api, cat("the epilogue's aux leading dimension is ", s.desc.aux_ld,
                    "; cuBLASLt needs a multiple of 8 and at least the ", m, " rows of D"));
    }
    if (s.desc.aux == nullptr)
      fail(api, "a GELU epilogue without CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER");
  }
  if (s.desc.epilogue != CUBLASLT_EPILOGUE_DEFAULT && s.desc.bias_type != -1 &&
      s.desc.bias_type != static_cast<std::int32_t>(s.d.type)) {
    fail(api, cat("the bias has type ", type_name(static_cast<cudaDataType_t>(s.desc.bias_type)),
                  "; with these types cuBLASLt takes it in D's type, ", type_name(s.d.type)));
  }
  s.m = m;
  s.n = n;
  s.k = k;
  return s;
}

}  // namespace

// ---- cuBLASLt ----------------------------------------------------------------------------------

cublasStatus_t cublasLtCreate(cublasLtHandle_t* handle) {
  std::lock_guard lock(cuda_emu::api_lock());
  if (handle == nullptr) fail("cublasLtCreate", "the handle pointer is null");
  *handle = new cublasLtContext{kLtHandleMagic};
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) {
  std::lock_guard lock(cuda_emu::api_lock());
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (handle->magic != kLtHandleMagic) fail("cublasLtDestroy", "not a live cuBLASLt handle");
  handle->magic = 0;
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* desc,
                                        cublasComputeType_t compute_type,
                                        cudaDataType_t scale_type) {
  std::lock_guard lock(cuda_emu::api_lock());
  const char* api = "cublasLtMatmulDescCreate";
  if (desc == nullptr) fail(api, "the descriptor pointer is null");
  if (compute_type != CUBLAS_COMPUTE_32F) {
    fail(api, cat("compute type ", static_cast<int>(compute_type),
                  " is not emulated (only CUBLAS_COMPUTE_32F)"));
  }
  if (scale_type != CUDA_R_32F) {
    fail(api, cat("scale type ", type_name(scale_type), " is not emulated (only CUDA_R_32F)"));
  }
  *desc = new cublasLtMatmulDescOpaque_t{};
  store(*desc, DescState{kDescMagic, CUBLAS_OP_N, CUBLAS_OP_N, CUBLASLT_EPILOGUE_DEFAULT, -1,
                         nullptr, nullptr, 0});
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
  std::lock_guard lock(cuda_emu::api_lock());
  if (desc == nullptr) return CUBLAS_STATUS_SUCCESS;
  load<DescState>(desc, kDescMagic, "cublasLtMatmulDescDestroy", "the matmul descriptor");
  store(desc, DescState{});
  delete desc;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc,
                                              cublasLtMatmulDescAttributes_t attr, const void* buf,
                                              std::size_t size) {
  std::lock_guard lock(cuda_emu::api_lock());
  const char* api = "cublasLtMatmulDescSetAttribute";
  auto state = load<DescState>(desc, kDescMagic, api, "the matmul descriptor");
  switch (attr) {
    case CUBLASLT_MATMUL_DESC_TRANSA:
      state.trans_a = attribute<cublasOperation_t>(buf, size, api, "CUBLASLT_MATMUL_DESC_TRANSA");
      transposes(state.trans_a, api, "CUBLASLT_MATMUL_DESC_TRANSA");
      break;
    case CUBLASLT_MATMUL_DESC_TRANSB:
      state.trans_b = attribute<cublasOperation_t>(buf, size, api, "CUBLASLT_MATMUL_DESC_TRANSB");
      transposes(state.trans_b, api, "CUBLASLT_MATMUL_DESC_TRANSB");
      break;
    case CUBLASLT_MATMUL_DESC_EPILOGUE: {
      const auto epilogue = static_cast<cublasLtEpilogue_t>(
          attribute<std::uint32_t>(buf, size, api, "CUBLASLT_MATMUL_DESC_EPILOGUE"));
      if (epilogue != CUBLASLT_EPILOGUE_DEFAULT && epilogue != CUBLASLT_EPILOGUE_BIAS &&
          epilogue != CUBLASLT_EPILOGUE_GELU_AUX_BIAS && epilogue != CUBLASLT_EPILOGUE_DGELU) {
        fail(api, cat("epilogue ", static_cast<int>(epilogue),
                      " is not emulated (only DEFAULT, BIAS, GELU_AUX_BIAS and DGELU)"));
      }
      state.epilogue = epilogue;
      break;
    }
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER:
      state.bias = attribute<const void*>(buf, size, api, "CUBLASLT_MATMUL_DESC_BIAS_POINTER");
      break;
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER:
      state.aux =
          attribute<const void*>(buf, size, api, "CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER");
      break;
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD:
      state.aux_ld =
          attribute<std::int64_t>(buf, size, api, "CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD");
      break;
    case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE:
      state.bias_type =
          attribute<std::int32_t>(buf, size, api, "CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE");
      if (state.bias_type != -1) {
        check_emulated_type(static_cast<cudaDataType_t>(state.bias_type), api, "the bias");
      }
      break;
    case CUBLASLT_MATMUL_DESC_POINTER_MODE:
      if (attribute<std::int32_t>(buf, size, api, "CUBLASLT_MATMUL_DESC_POINTER_MODE") !=
          CUBLASLT_POINTER_MODE_HOST) {
        fail(api, "only CUBLASLT_POINTER_MODE_HOST is emulated");
      }
      break;
    default:
      fail(api, cat("matmul descriptor attribute ", static_cast<int>(attr),
                    " is not emulated (TRANSA, TRANSB, EPILOGUE, BIAS_POINTER, BIAS_DATA_TYPE, "
                    "EPILOGUE_AUX_POINTER, EPILOGUE_AUX_LD and POINTER_MODE are)"));
  }
  store(desc, state);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* layout, cudaDataType type,
                                          std::uint64_t rows, std::uint64_t cols, std::int64_t ld) {
  std::lock_guard lock(cuda_emu::api_lock());
  const char* api = "cublasLtMatrixLayoutCreate";
  if (layout == nullptr) fail(api, "the layout pointer is null");
  check_emulated_type(type, api, "the matrix");
  constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int32_t>::max());
  if (rows > kMax || cols > kMax) fail(api, cat(rows, "x", cols, " exceeds int32 sizes"));
  if (ld < 0) fail(api, cat("negative leading dimension ", ld));
  *layout = new cublasLtMatrixLayoutOpaque_t{};
  store(*layout, LayoutState{kLayoutMagic, type, rows, cols, ld});
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
  std::lock_guard lock(cuda_emu::api_lock());
  if (layout == nullptr) return CUBLAS_STATUS_SUCCESS;
  load<LayoutState>(layout, kLayoutMagic, "cublasLtMatrixLayoutDestroy", "the layout");
  store(layout, LayoutState{});
  delete layout;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t layout,
                                                cublasLtMatrixLayoutAttribute_t attr,
                                                const void* buf, std::size_t size) {
  std::lock_guard lock(cuda_emu::api_lock());
  const char* api = "cublasLtMatrixLayoutSetAttribute";
  auto state = load<LayoutState>(layout, kLayoutMagic, api, "the layout");
  switch (attr) {
    case CUBLASLT_MATRIX_LAYOUT_TYPE:
      state.type = static_cast<cudaDataType_t>(
          attribute<std::uint32_t>(buf, size, api, "CUBLASLT_MATRIX_LAYOUT_TYPE"));
      check_emulated_type(state.type, api, "the matrix");
      break;
    case CUBLASLT_MATRIX_LAYOUT_ORDER:
      if (attribute<std::int32_t>(buf, size, api, "CUBLASLT_MATRIX_LAYOUT_ORDER") !=
          CUBLASLT_ORDER_COL) {
        fail(api, "only CUBLASLT_ORDER_COL is emulated");
      }
      break;
    case CUBLASLT_MATRIX_LAYOUT_ROWS:
      state.rows = attribute<std::uint64_t>(buf, size, api, "CUBLASLT_MATRIX_LAYOUT_ROWS");
      break;
    case CUBLASLT_MATRIX_LAYOUT_COLS:
      state.cols = attribute<std::uint64_t>(buf, size, api, "CUBLASLT_MATRIX_LAYOUT_COLS");
      break;
    case CUBLASLT_MATRIX_LAYOUT_LD:
      state.ld = attribute<std::int64_t>(buf, size, api, "CUBLASLT_MATRIX_LAYOUT_LD");
      break;
    case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT:
      if (attribute<std::int32_t>(buf, size, api, "CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT") != 1) {
        fail(api, "batched cuBLASLt layouts are not emulated (batch count must be 1)");
      }
      break;
    default:
      fail(api,
           cat("layout attribute ", static_cast<int>(attr),
               " is not emulated (TYPE, ORDER = COL, ROWS, COLS, LD and BATCH_COUNT = 1 are)"));
  }
  store(layout, state);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
  std::lock_guard lock(cuda_emu::api_lock());
  if (pref == nullptr) fail("cublasLtMatmulPreferenceCreate", "the preference pointer is null");
  *pref = new cublasLtMatmulPreferenceOpaque_t{};
  store(*pref, PreferenceState{kPreferenceMagic, 256, 256, 256, 256, 0});
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  std::lock_guard lock(cuda_emu::api_lock());
  if (pref == nullptr) return CUBLAS_STATUS_SUCCESS;
  load<PreferenceState>(pref, kPreferenceMagic, "cublasLtMatmulPreferenceDestroy",
                        "the preference");
  store(pref, PreferenceState{});
  delete pref;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr,
                                                    const void* buf, std::size_t size) {
  std::lock_guard lock(cuda_emu::api_lock());
  const char* api = "cublasLtMatmulPreferenceSetAttribute";
  auto state = load<PreferenceState>(pref, kPreferenceMagic, api, "the preference");
  switch (attr) {
    case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES:
      state.max_workspace_bytes =
          attribute<std::uint64_t>(buf, size, api, "CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES");
      break;
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES:
      state.align_a = attribute<std::uint32_t>(buf, size, api, "MIN_ALIGNMENT_A_BYTES");
      break;
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES:
      state.align_b = attribute<std::uint32_t>(buf, size, api, "MIN_ALIGNMENT_B_BYTES");
      break;
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES:
      state.align_c = attribute<std::uint32_t>(buf, size, api, "MIN_ALIGNMENT_C_BYTES");
      break;
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES:
      state.align_d = attribute<std::uint32_t>(buf, size, api, "MIN_ALIGNMENT_D_BYTES");
      break;
    default:
      fail(api,
           cat("preference attribute ", static_cast<int>(attr),
               " is not emulated (MAX_WORKSPACE_BYTES and MIN_ALIGNMENT_{A,B,C,D}_BYTES are)"));
  }
  store(pref, state);
  return CUBLAS_STATUS_SUCCESS;
}

// The emulator has one algorithm for every valid product: it needs no workspace and remembers
// the operand alignment it was chosen for, which cublasLtMatmul then holds the pointers to.
cublasStatus_t cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a_layout,
    cublasLtMatrixLayout_t b_layout, cublasLtMatrixLayout_t c_layout,
    cublasLtMatrixLayout_t d_layout, cublasLtMatmulPreference_t pref, int requested,
    cublasLtMatmulHeuristicResult_t results[], int* returned) {
  std::lock_guard lock(cuda_emu::api_lock());
  const char* api = "cublasLtMatmulAlgoGetHeuristic";
  if (handle == nullptr || handle->magic != kLtHandleMagic) fail(api, "not a live cuBLASLt handle");
  const LtShape s = lt_shape(desc, a_layout, b_layout, c_layout, d_layout, api);
  // As cuBLASLt, the algorithm assumes the aux pointer's alignment at this call.
  std::uint32_t align_aux = 0;
  if (s.desc.aux != nullptr) {
    align_aux = 256;
    while (align_aux > 1 && address(s.desc.aux) % align_aux != 0) align_aux /= 2;
  }
  const auto prefs = load<PreferenceState>(pref, kPreferenceMagic, api, "the preference");
  // AUTOTRAIN_CUDA_EMU_LT_EPILOGUES=plain plays a cuBLASLt without GELU epilogue algorithms for
  // these shapes: the heuristic returns none, so callers' fallbacks get tested.
  if (gelu_epilogues_are("plain") && is_gelu_epilogue(s.desc.epilogue)) {
    *returned = 0;
    return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  if (requested < 1) fail(api, cat("requestedAlgoCount is ", requested, "; ask for at least 1"));
  if (results == nullptr || returned == nullptr) fail(api, "a result pointer is null");
  results[0] = cublasLtMatmulHeuristicResult_t{};
  store(&results[0].algo, AlgoState{kAlgoMagic, prefs.align_a, prefs.align_b, prefs.align_c,
                                    prefs.align_d, align_aux});
  results[0].workspaceSize = 0;
  results[0].state = CUBLAS_STATUS_SUCCESS;
  results[0].wavesCount = 1.0f;
  *returned = 1;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha,
                              const void* a, cublasLtMatrixLayout_t a_layout, const void* b,
                              cublasLtMatrixLayout_t b_layout, const void* beta, const void* c,
                              cublasLtMatrixLayout_t c_layout, void* d,
                              cublasLtMatrixLayout_t d_layout, const cublasLtMatmulAlgo_t* algo,
                              void* workspace, std::size_t workspace_bytes, cudaStream_t stream) {
  std::lock_guard lock(cuda_emu::api_lock());
  const char* api = "cublasLtMatmul";
  if (handle == nullptr || handle->magic != kLtHandleMagic) fail(api, "not a live cuBLASLt handle");
  const LtShape s = lt_shape(desc, a_layout, b_layout, c_layout, d_layout, api);
  if (algo != nullptr) {  // null: cuBLASLt picks one itself, for these very pointers
    const auto chosen = load<AlgoState>(algo, kAlgoMagic, api, "the algorithm");
    const struct {
      const char* name;
      const void* pointer;
      std::uint32_t alignment;
      const char* set_by;
    } operands[] = {{"A", a, chosen.align_a, "CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES"},
                    {"B", b, chosen.align_b, "CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES"},
                    {"C", c, chosen.align_c, "CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES"},
                    {"D", d, chosen.align_d, "CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES"},
                    {"the epilogue aux", s.desc.aux, chosen.align_aux,
                     "the aux pointer set when the heuristic ran"}};
    for (const auto& operand : operands) {
      if (operand.alignment != 0 && address(operand.pointer) % operand.alignment != 0) {
        fail(api,
             cat(operand.name, " (", operand.pointer, ") is not aligned to the ", operand.alignment,
                 " bytes its algorithm was chosen for (", operand.set_by, ")"));
      }
    }
  }
  // AUTOTRAIN_CUDA_EMU_LT_EPILOGUES=refuse: the heuristic offers an algorithm for the GELU
  // epilogues but the call refuses it, before queuing anything, as cuBLASLt does with arguments
  // it does not support.
  if (gelu_epilogues_are("refuse") && is_gelu_epilogue(s.desc.epilogue)) {
    return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  if (workspace_bytes > 0)
    cuda_emu::require_device(workspace, workspace_bytes, "cublasLtMatmul workspace");
  const bool has_bias = s.desc.epilogue == CUBLASLT_EPILOGUE_BIAS ||
                        s.desc.epilogue == CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
  if (has_bias && s.desc.bias == nullptr) {
    fail(api, "a bias epilogue without CUBLASLT_MATMUL_DESC_BIAS_POINTER");
  }
  Gemm g{};
  g.api = api;
  g.trans_a = transposes(s.desc.trans_a, api, "CUBLASLT_MATMUL_DESC_TRANSA");
  g.trans_b = transposes(s.desc.trans_b, api, "CUBLASLT_MATMUL_DESC_TRANSB");
  g.m = s.m;
  g.n = s.n;
  g.k = s.k;
  g.batch = 1;
  g.alpha = host_scalar(alpha, api, "alpha");
  g.beta = host_scalar(beta, api, "beta");
  g.in_type = s.a.type;
  g.out_type = s.d.type;
  g.a = a;
  g.lda = s.a.ld;
  g.b = b;
  g.ldb = s.b.ld;
  g.c = c;
  g.ldc = s.c.ld;
  g.d = d;
  g.ldd = s.d.ld;
  g.bias = has_bias ? s.desc.bias : nullptr;
  g.gelu_aux = s.desc.epilogue == CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
  g.dgelu = s.desc.epilogue == CUBLASLT_EPILOGUE_DGELU;
  if (g.gelu_aux || g.dgelu) {
    g.aux = const_cast<void*>(s.desc.aux);  // written by GELU_AUX_BIAS, read by DGELU
    g.aux_ld = s.desc.aux_ld;
  }
  check_and_queue(g, stream);
  return CUBLAS_STATUS_SUCCESS;
}

// ---- cuBLAS ------------------------------------------------------------------------------------

namespace {

cublasContext& live(cublasHandle_t handle, const char* api) {
  if (handle == nullptr || handle->magic != kHandleMagic) fail(api, "not a live cuBLAS handle");
  return *handle;
}

}  // namespace

cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
  std::lock_guard lock(cuda_emu::api_lock());
  if (handle == nullptr) fail("cublasCreate", "the handle pointer is null");
  *handle = new cublasContext{kHandleMagic, nullptr, nullptr, 0};
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
  std::lock_guard lock(cuda_emu::api_lock());
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  live(handle, "cublasDestroy").magic = 0;
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

// As in cuBLAS, setting the stream drops a workspace set with cublasSetWorkspace.
cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
  std::lock_guard lock(cuda_emu::api_lock());
  auto& context = live(handle, "cublasSetStream");
  context.stream = stream;
  context.workspace = nullptr;
  context.workspace_bytes = 0;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void* workspace, std::size_t bytes) {
  std::lock_guard lock(cuda_emu::api_lock());
  const char* api = "cublasSetWorkspace";
  auto& context = live(handle, api);
  if (bytes > 0) {
    cuda_emu::require_device(workspace, bytes, "cublasSetWorkspace workspace");
    if (address(workspace) % 256 != 0) fail(api, "the workspace must be aligned to 256 bytes");
  }
  context.workspace = workspace;
  context.workspace_bytes = bytes;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGemmStridedBatchedEx(
    cublasHandle_t handle, cublasOperation_t trans_a, cublasOperation_t trans_b, int m, int n,
    int k, const void* alpha, const void* a, cudaDataType a_type, int lda, long long stride_a,
    const void* b, cudaDataType b_type, int ldb, long long stride_b, const void* beta, void* c,
    cudaDataType c_type, int ldc, long long stride_c, int batch, cublasComputeType_t compute_type,
    cublasGemmAlgo_t /*algo: a speed hint*/) {
  std::lock_guard lock(cuda_emu::api_lock());
  const char* api = "cublasGemmStridedBatchedEx";
  const auto& context = live(handle, api);
  if (compute_type != CUBLAS_COMPUTE_32F) {
    fail(api, cat("compute type ", static_cast<int>(compute_type),
                  " is not emulated (only CUBLAS_COMPUTE_32F)"));
  }
  if (a_type != b_type) {
    fail(api, cat("A has type ", type_name(a_type), " but B has ", type_name(b_type)));
  }
  Gemm g{};
  g.api = api;
  g.trans_a = transposes(trans_a, api, "transa");
  g.trans_b = transposes(trans_b, api, "transb");
  g.m = m;
  g.n = n;
  g.k = k;
  g.batch = batch;
  g.alpha = host_scalar(alpha, api, "alpha");
  g.beta = host_scalar(beta, api, "beta");
  g.in_type = a_type;
  g.out_type = c_type;
  g.a = a;
  g.lda = lda;
  g.stride_a = stride_a;
  g.b = b;
  g.ldb = ldb;
  g.stride_b = stride_b;
  g.c = c;
  g.ldc = ldc;
  g.stride_c = stride_c;
  g.d = c;
  g.ldd = ldc;
  g.stride_d = stride_c;
  check_and_queue(g, context.stream);
  return CUBLAS_STATUS_SUCCESS;
}

const char* cublasGetStatusName(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS:
      return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR:
      return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR:
      return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR:
      return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return "CUBLAS_STATUS_UNKNOWN";
}

const char* cublasGetStatusString(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS:
      return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "the handle was not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "a resource allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "an argument has an invalid value";
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return "the device lacks a feature the call needs";
    case CUBLAS_STATUS_MAPPING_ERROR:
      return "access to GPU memory failed";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "the GPU program failed to execute";
    case CUBLAS_STATUS_INTERNAL_ERROR:
      return "an internal operation failed";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "the requested functionality is not supported";
    case CUBLAS_STATUS_LICENSE_ERROR:
      return "the requested functionality needs a license";
  }
  return "unknown status";
}
