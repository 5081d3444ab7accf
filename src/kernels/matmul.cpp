// Matmul (Conv1D weight layout [IC, OC]) and linear (torch.nn.Linear layout [OC, IC]) forward
// and backward. float products go through oneDNN (onednn_gemm.cpp) except matrix-vector ones and
// those made inside an OpenMP parallel region (attention's per-head products), which stay on
// OpenBLAS; double products stay on OpenBLAS.
// Invariant: parameter gradients accumulate (+=, beta = 1), activation gradients are
// overwritten (=, beta = 0). One large gemm over all N = B·T rows per call: that is where the
// machine's FLOPs are.
#include "autotrain/kernels/matmul.hpp"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <limits>
#include <vector>

#include "autotrain/core/error.hpp"
#include "autotrain/core/timer.hpp"
#include "onednn_gemm.hpp"

namespace autotrain::kernels {
namespace {

std::atomic<GemmPrecision> precision_{GemmPrecision::fp32};

CBLAS_TRANSPOSE to_cblas(Transpose t) {
  return t == Transpose::yes ? CblasTrans : CblasNoTrans;
}

// BLAS takes its sizes as blasint (32 bits in Debian's OpenBLAS): a larger one must not wrap.
blasint to_blasint(std::size_t n) {
  AT_CHECK(n <= static_cast<std::size_t>(std::numeric_limits<blasint>::max()), "matmul: dimension ",
           n, " exceeds the ", std::numeric_limits<blasint>::max(), " that this BLAS (blasint of ",
           sizeof(blasint) * 8, " bits) accepts");
  return static_cast<blasint>(n);
}

// out[n, :] = bias for every row, so that the gemm after it adds the product (beta = 1): one pass
// over out.
template <typename F>
void broadcast_bias(F* out, const F* bias, std::size_t N, int OC) {
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t n = 0; n < static_cast<std::ptrdiff_t>(N); ++n) {
    std::copy(bias, bias + OC, out + n * OC);
  }
}

// dbias[OC] += Σ_n dout[n, :]. Threads split the columns, so each sum has a fixed order.
template <typename F>
void bias_backward(F* dbias, const F* dout, std::size_t N, int OC) {
  constexpr int kBlock = 64;
  const int blocks = (OC + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static)
  for (int blk = 0; blk < blocks; ++blk) {
    const int o0 = blk * kBlock;
    const int width = std::min(kBlock, OC - o0);
    F sum[kBlock] = {};
    for (std::size_t n = 0; n < N; ++n) {
      const F* d = dout + n * OC + o0;
#pragma omp simd
      for (int o = 0; o < width; ++o) sum[o] += d[o];
    }
    for (int o = 0; o < width; ++o) dbias[o0 + o] += sum[o];
  }
}

}  // namespace

GemmPrecision set_gemm_precision(GemmPrecision precision) {
  AT_CHECK(precision == GemmPrecision::fp32 || cpu_has_native_bf16(),
           "bf16 products on the CPU need AVX512-BF16 or AMX-BF16; oneDNN found ", cpu_gemm_isa());
  return precision_.exchange(precision);
}

GemmPrecision gemm_precision() {
  return precision_.load();
}

bool cpu_has_native_bf16() {
  return onednn::native_bf16();
}

std::string cpu_gemm_isa() {
  return onednn::isa_name();
}

std::string onednn_version() {
  return onednn::version();
}

SharedBf16Operand::SharedBf16Operand(const float* x, std::size_t n) {
  if (gemm_precision() != GemmPrecision::bf16 || n == 0) return;
  onednn::share_bf16(x, n);
  x_ = x;
}

SharedBf16Operand::~SharedBf16Operand() {
  if (x_ != nullptr) onednn::unshare_bf16(x_);
}

template <>
void gemm<float>(Transpose ta, Transpose tb, std::size_t M, std::size_t N, std::size_t K,
                 float alpha, const float* a, std::size_t lda, const float* b, std::size_t ldb,
                 float beta, float* c, std::size_t ldc) {
  // One row or one column (generation with a key/value cache): a matrix-vector product. sgemm
  // would pack the whole other matrix for a single row, which costs several times the product.
  if (M == 1) {
    // c[1, N] = a[1, K] · op(b)  <=>  cᵀ = op(b)ᵀ · aᵀ; a's K elements are at stride 1, or lda
    // when a is stored transposed ([K, 1]).
    const blasint inc_a = ta == Transpose::yes ? to_blasint(lda) : 1;
    if (tb == Transpose::no) {  // b [K, N]
      cblas_sgemv(CblasRowMajor, CblasTrans, to_blasint(K), to_blasint(N), alpha, b,
                  to_blasint(ldb), a, inc_a, beta, c, 1);
    } else {  // b [N, K]
      cblas_sgemv(CblasRowMajor, CblasNoTrans, to_blasint(N), to_blasint(K), alpha, b,
                  to_blasint(ldb), a, inc_a, beta, c, 1);
    }
    return;
  }
  if (N == 1) {
    // c[M, 1] (stride ldc) = op(a) · b[K, 1]; b's K elements are at stride ldb, or 1 when b is
    // stored transposed ([1, K]).
    const blasint inc_b = tb == Transpose::yes ? 1 : to_blasint(ldb);
    if (ta == Transpose::no) {  // a [M, K]
      cblas_sgemv(CblasRowMajor, CblasNoTrans, to_blasint(M), to_blasint(K), alpha, a,
                  to_blasint(lda), b, inc_b, beta, c, to_blasint(ldc));
    } else {  // a [K, M]
      cblas_sgemv(CblasRowMajor, CblasTrans, to_blasint(K), to_blasint(M), alpha, a,
                  to_blasint(lda), b, inc_b, beta, c, to_blasint(ldc));
    }
    return;
  }
  if (M == 0 || N == 0) return;
  if (K == 0) {  // no products: c = beta · c
    for (std::size_t i = 0; i < M; ++i) {
      for (std::size_t j = 0; j < N; ++j)
        c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
    }
    return;
  }
  if (!omp_in_parallel()) {
    onednn::gemm(ta, tb, M, N, K, alpha, a, lda, b, ldb, beta, c, ldc,
                 gemm_precision() == GemmPrecision::bf16);
    return;
  }
  cblas_sgemm(CblasRowMajor, to_cblas(ta), to_cblas(tb), to_blasint(M), to_blasint(N),
              to_blasint(K), alpha, a, to_blasint(lda), b, to_blasint(ldb), beta, c,
              to_blasint(ldc));
}

template <>
void gemm<double>(Transpose ta, Transpose tb, std::size_t M, std::size_t N, std::size_t K,
                  double alpha, const double* a, std::size_t lda, const double* b, std::size_t ldb,
                  double beta, double* c, std::size_t ldc) {
  cblas_dgemm(CblasRowMajor, to_cblas(ta), to_cblas(tb), to_blasint(M), to_blasint(N),
              to_blasint(K), alpha, a, to_blasint(lda), b, to_blasint(ldb), beta, c,
              to_blasint(ldc));
}

namespace {

// out[N, OC] = inp[N, IC] · W (+ bias), W the weight as stored: [IC, OC] (`stored` no, leading
// dimension OC) or [OC, IC] (`stored` yes: transposed, leading dimension IC).
template <typename F>
void biased_product(F* out, const F* inp, const F* weight, Transpose stored, const F* bias,
                    std::size_t N, int IC, int OC) {
  F beta = 0;
  if (bias != nullptr) {
    broadcast_bias(out, bias, N, OC);
    beta = 1;
  }
  const auto ldw = static_cast<std::size_t>(stored == Transpose::no ? OC : IC);
  gemm<F>(Transpose::no, stored, N, OC, IC, F(1), inp, IC, weight, ldw, beta, out, OC);
}

}  // namespace

template <typename F>
void matmul_forward(F* out, const F* inp, const F* weight, const F* bias, std::size_t N, int IC,
                    int OC) {
  biased_product(out, inp, weight, Transpose::no, bias, N, IC, OC);
}

template <typename F>
void matmul_backward(F* dinp, F* dweight, F* dbias, const F* dout, const F* inp, const F* weight,
                     std::size_t N, int IC, int OC) {
  const SharedBf16Operand shared_dout(dout, N * static_cast<std::size_t>(OC));
  // dinp[N, IC] = dout[N, OC] · weight[IC, OC]ᵀ
  gemm<F>(Transpose::no, Transpose::yes, N, IC, OC, F(1), dout, OC, weight, OC, F(0), dinp, IC);
  // dweight[IC, OC] += inp[N, IC]ᵀ · dout[N, OC]
  gemm<F>(Transpose::yes, Transpose::no, IC, OC, N, F(1), inp, IC, dout, OC, F(1), dweight, OC);
  if (dbias != nullptr) bias_backward(dbias, dout, N, OC);
}

template <typename F>
void linear_forward(F* out, const F* inp, const F* weight, const F* bias, std::size_t N, int IC,
                    int OC) {
  biased_product(out, inp, weight, Transpose::yes, bias, N, IC, OC);
}

template <typename F>
void linear_backward(F* dinp, F* dweight, F* dbias, const F* dout, const F* inp, const F* weight,
                     std::size_t N, int IC, int OC) {
  const SharedBf16Operand shared_dout(dinp != nullptr ? dout : nullptr,
                                      dinp != nullptr ? N * static_cast<std::size_t>(OC) : 0);
  // dinp[N, IC] = dout[N, OC] · weight[OC, IC]
  if (dinp != nullptr) {
    gemm<F>(Transpose::no, Transpose::no, N, IC, OC, F(1), dout, OC, weight, IC, F(0), dinp, IC);
  }
  // dweight[OC, IC] += dout[N, OC]ᵀ · inp[N, IC]
  gemm<F>(Transpose::yes, Transpose::no, OC, IC, N, F(1), dout, OC, inp, IC, F(1), dweight, IC);
  if (dbias != nullptr) bias_backward(dbias, dout, N, OC);
}

double measure_sgemm_gflops(int n, int repeats) {
  const auto size = static_cast<std::size_t>(n) * n;
  std::vector<float> a(size), b(size), c(size);
  for (std::size_t i = 0; i < size; ++i) {
    a[i] = static_cast<float>(i % 7) * 0.1f;
    b[i] = static_cast<float>(i % 5) * 0.1f;
  }
  const auto un = static_cast<std::size_t>(n);
  gemm<float>(Transpose::no, Transpose::no, un, un, un, 1.0f, a.data(), un, b.data(), un, 0.0f,
              c.data(), un);  // warm-up: thread pool, page faults
  double best = 0;
  for (int r = 0; r < repeats; ++r) {
    Timer timer;
    gemm<float>(Transpose::no, Transpose::no, un, un, un, 1.0f, a.data(), un, b.data(), un, 0.0f,
                c.data(), un);
    best = std::max(best, 2.0 * n * n * static_cast<double>(n) / timer.seconds() * 1e-9);
  }
  return best;
}

template void matmul_forward<float>(float*, const float*, const float*, const float*, std::size_t,
                                    int, int);
template void matmul_forward<double>(double*, const double*, const double*, const double*,
                                     std::size_t, int, int);
template void matmul_backward<float>(float*, float*, float*, const float*, const float*,
                                     const float*, std::size_t, int, int);
template void matmul_backward<double>(double*, double*, double*, const double*, const double*,
                                      const double*, std::size_t, int, int);
template void linear_forward<float>(float*, const float*, const float*, const float*, std::size_t,
                                    int, int);
template void linear_forward<double>(double*, const double*, const double*, const double*,
                                     std::size_t, int, int);
template void linear_backward<float>(float*, float*, float*, const float*, const float*,
                                     const float*, std::size_t, int, int);
template void linear_backward<double>(double*, double*, double*, const double*, const double*,
                                      const double*, std::size_t, int, int);

}  // namespace autotrain::kernels
