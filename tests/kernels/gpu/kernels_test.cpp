// Every CUDA kernel, forward and backward, against the CPU kernel (run in double on the same
// inputs, rounded first to the GPU's element type) on random inputs. Tolerances per element type,
// |gpu - cpu| <= atol + rtol·|cpu|:
//   fp32: rtol 1e-4, atol 1e-5  (summation order and exp differ; nothing is rounded)
//   fp16: rtol 1e-2, atol 1e-2  (10-bit mantissa: 5e-4 per rounding, a few roundings deep)
//   bf16: rtol 5e-2, atol 5e-2  (7-bit mantissa: 4e-3 per rounding)
// Gradient buffers start from random values, so accumulate (+=) and overwrite (=) are checked.
// Shapes are tiny: B = 2, T = 7, C = 64, NH = 4 (HS = 16), V = 50 padded to Vp = 64.
// The memory-bound kernels move 16 bytes per access when rows and pointers allow and take a
// scalar path otherwise: each is also run on shapes or pointers that rule packing out (C = 34, a
// pointer one element past an allocation's start, odd lengths). The emulator stops any 16-byte
// access that is not 16-byte aligned, so a wrong choice of path fails there.
// Skips with a message in builds without CUDA and on machines without a GPU.
#include <gtest/gtest.h>

#ifndef AUTOTRAIN_HAVE_CUDA

TEST(GpuKernels, SkippedBecauseTheBuildHasNoCuda) {
  GTEST_SKIP() << "this build has no CUDA (AUTOTRAIN_CUDA=off or no toolkit): CUDA kernels not "
                  "tested";
}

#else

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "../attention_reference.hpp"
#include "autotrain/core/dtype.hpp"
#include "autotrain/core/gpu/check.hpp"
#include "autotrain/core/gpu/device.hpp"
#include "autotrain/kernels/attention.hpp"
#include "autotrain/kernels/crossentropy.hpp"
#include "autotrain/kernels/dropout_hash.hpp"
#include "autotrain/kernels/encoder.hpp"
#include "autotrain/kernels/gelu.hpp"
#include "autotrain/kernels/gpu/adamw.hpp"
#include "autotrain/kernels/gpu/attention.hpp"
#include "autotrain/kernels/gpu/crossentropy.hpp"
#include "autotrain/kernels/gpu/dropout.hpp"
#include "autotrain/kernels/gpu/encoder.hpp"
#include "autotrain/kernels/gpu/flash_attention.hpp"
#include "autotrain/kernels/gpu/gelu.hpp"
#include "autotrain/kernels/gpu/layernorm.hpp"
#include "autotrain/kernels/gpu/matmul.hpp"
#include "autotrain/kernels/gpu/residual.hpp"
#include "autotrain/kernels/gpu/vector.hpp"
#include "autotrain/kernels/layernorm.hpp"
#include "autotrain/kernels/matmul.hpp"
#include "autotrain/kernels/residual.hpp"
#include "gpu/element_types.hpp"
#include "kernel_test_support.hpp"
#include "test_support.hpp"

namespace autotrain::kernels::gpu_kernels_test {
namespace {

constexpr int kB = 2;
constexpr int kT = 7;
constexpr int kC = 64;
constexpr int kNH = 4;
constexpr int kV = 50;
constexpr int kVp = 64;
constexpr std::size_t kN = static_cast<std::size_t>(kB) * kT;

using namespace gpu_test;
using testing::random_vec;

template <typename F>
class GpuKernelsTest : public KernelFixture<F> {};

TYPED_TEST_SUITE(GpuKernelsTest, autotrain::testing::GpuElementTypes,
                 autotrain::testing::GpuTypeNames);

TYPED_TEST(GpuKernelsTest, EncoderMatchesCpuAndAccumulatesRepeatedTokens) {
  using F = TypeParam;
  constexpr int kSmallV = 5;  // B·T = 14 ids over 5 tokens: rows of dwte must collide
  // C = 64 takes the packed path, C = 34 (not a multiple of a 16-byte pack) the scalar one.
  for (const int C : {kC, 34}) {
    const std::string shape = " C=" + std::to_string(C);
    const auto ids = random_ids(kN, kSmallV, 1);
    Vec wte = random_vec(static_cast<std::size_t>(kSmallV) * C, 2);
    Vec wpe = random_vec(static_cast<std::size_t>(kT) * C, 3);
    Vec dout = random_vec(kN * C, 4);
    Vec dwte = random_vec(wte.size(), 5);
    Vec dwpe = random_vec(wpe.size(), 6);
    Vec out(kN * C);
    const auto d_ids = upload_ids(ids);
    DeviceTensor<F> d_wte(wte), d_wpe(wpe), d_dout(dout), d_dwte(dwte), d_dwpe(dwpe), d_out(out);

    gpu::encoder_forward(d_out.get(), d_ids.as<std::int32_t>(), d_wte.get(), d_wpe.get(), kB, kT, C,
                         this->stream());
    // The token runs: positions grouped by token, built on the host as the device model does.
    std::vector<std::int32_t> runs(3 * kN + 1);
    std::vector<std::uint64_t> scratch;
    const int run_count = gpu::make_token_runs(ids.data(), kN, runs.data(), runs.data() + kN,
                                               runs.data() + 2 * kN + 1, scratch);
    ASSERT_LE(run_count, kSmallV);
    EXPECT_EQ(runs[kN + static_cast<std::size_t>(run_count)], static_cast<std::int32_t>(kN));
    const auto d_runs = upload_ids(runs);
    const auto* r = d_runs.as<std::int32_t>();
    const gpu::TokenRuns token_runs{r, r + kN, r + 2 * kN + 1, run_count};
    gpu::encoder_backward(d_dwte.get(), d_dwpe.get(), d_dout.get(), token_runs, kB, kT, C,
                          this->stream());
    this->sync();
    encoder_forward(out.data(), ids.data(), wte.data(), wpe.data(), kB, kT, C);
    encoder_backward(dwte.data(), dwpe.data(), dout.data(), ids.data(), kB, kT, C);
    this->expect_close(d_out.download(), out, "encoder out" + shape);
    this->expect_close(d_dwte.download(), dwte, "encoder dwte" + shape);
    this->expect_close(d_dwpe.download(), dwpe, "encoder dwpe" + shape);
  }
}

// Rows x channels: the tiny shape (one chunk of rows, packed); 150 rows of C = 34 (three chunks
// of the dweight/dbias partials, scalar path); 70 rows of C = 1600 (GPT-2 XL's width: the most
// values per lane, two chunks).
TYPED_TEST(GpuKernelsTest, LayerNormMatchesCpuForwardAndBackward) {
  using F = TypeParam;
  for (const auto& [N, C] : {std::pair<std::size_t, int>{kN, kC}, {150, 34}, {70, 1600}}) {
    const std::string shape = " N=" + std::to_string(N) + " C=" + std::to_string(C);
    Vec inp = random_vec(N * C, 11, 2.0);
    Vec weight = random_vec(C, 12);
    Vec bias = random_vec(C, 13);
    Vec dout = random_vec(N * C, 14);
    Vec dinp = random_vec(N * C, 15);
    Vec dweight = random_vec(C, 16);
    Vec dbias = random_vec(C, 17);
    Vec out(N * C), mean(N), rstd(N);
    DeviceTensor<F> d_inp(inp), d_weight(weight), d_bias(bias), d_dout(dout), d_dinp(dinp),
        d_dweight(dweight), d_dbias(dbias), d_out(out);
    DeviceTensor<float> d_mean(mean), d_rstd(rstd);
    autotrain::gpu::DeviceBuffer scratch(gpu::layernorm_backward_scratch_floats(N, C) *
                                         sizeof(float));

    gpu::layernorm_forward(d_out.get(), d_mean.get(), d_rstd.get(), d_inp.get(), d_weight.get(),
                           d_bias.get(), N, C, this->stream());
    gpu::layernorm_backward(d_dinp.get(), d_dweight.get(), d_dbias.get(), d_dout.get(), d_inp.get(),
                            d_weight.get(), d_mean.get(), d_rstd.get(), scratch.as<float>(), N, C,
                            this->stream());
    this->sync();
    layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), weight.data(), bias.data(),
                      N, C);
    layernorm_backward(dinp.data(), dweight.data(), dbias.data(), dout.data(), inp.data(),
                       weight.data(), mean.data(), rstd.data(), N, C);
    this->expect_close(d_out.download(), out, "layernorm out" + shape);
    // Statistics are fp32 for every element type.
    expect_close(d_mean.download(), mean, 1e-4, 1e-5, "layernorm mean" + shape);
    expect_close(d_rstd.download(), rstd, 1e-4, 1e-5, "layernorm rstd" + shape);
    this->expect_close(d_dinp.download(), dinp, "layernorm dinp" + shape);
    this->expect_close(d_dweight.download(), dweight, "layernorm dweight" + shape);
    this->expect_close(d_dbias.download(), dbias, "layernorm dbias" + shape);
  }
}

// OC = 3C takes the bias gradient's 16-byte loads, OC = 20 (not a whole number of packs) its
// scalar loads.
// Real GPU only: cuBLASLt's bias and bias-gradient epilogues (the emulator computes them itself).
TYPED_TEST(GpuKernelsTest, MatmulMatchesCpuWithFusedBiasAndAccumulatedGradients) {
  using F = TypeParam;
  constexpr int IC = kC;
  for (const int OC : {3 * kC, 20}) {
    SCOPED_TRACE("OC = " + std::to_string(OC));
    Vec inp = random_vec(kN * IC, 21);
    Vec weight = random_vec(static_cast<std::size_t>(IC) * OC, 22, 0.2);
    Vec bias = random_vec(OC, 23);
    Vec dout = random_vec(kN * OC, 24);
    Vec dinp = random_vec(kN * IC, 25);  // garbage: must be overwritten
    Vec dweight = random_vec(weight.size(), 26);
    Vec dbias = random_vec(OC, 27);
    Vec out(kN * OC), out_nobias(kN * OC);
    DeviceTensor<F> d_inp(inp), d_weight(weight), d_bias(bias), d_dout(dout), d_dinp(dinp),
        d_dweight(dweight), d_dbias(dbias), d_out(out), d_out_nobias(out_nobias);
    autotrain::gpu::DeviceBuffer scratch(gpu::matmul_backward_scratch_floats(kN, OC) *
                                         sizeof(float));
    const gpu::BlasHandle blas;

    gpu::matmul_forward(blas, d_out.get(), d_inp.get(), d_weight.get(), d_bias.get(), kN, IC, OC,
                        this->stream());
    gpu::matmul_forward<F>(blas, d_out_nobias.get(), d_inp.get(), d_weight.get(), nullptr, kN, IC,
                           OC, this->stream());
    gpu::matmul_backward(blas, d_dinp.get(), d_dweight.get(), d_dbias.get(), d_dout.get(),
                         d_inp.get(), d_weight.get(), scratch.as<float>(), kN, IC, OC,
                         this->stream());
    this->sync();
    matmul_forward(out.data(), inp.data(), weight.data(), bias.data(), kN, IC, OC);
    matmul_forward<double>(out_nobias.data(), inp.data(), weight.data(), nullptr, kN, IC, OC);
    matmul_backward(dinp.data(), dweight.data(), dbias.data(), dout.data(), inp.data(),
                    weight.data(), kN, IC, OC);
    this->expect_close(d_out.download(), out, "matmul out (bias epilogue)");
    this->expect_close(d_out_nobias.download(), out_nobias, "matmul out (no bias)");
    this->expect_close(d_dinp.download(), dinp, "matmul dinp");
    this->expect_close(d_dweight.download(), dweight, "matmul dweight");
    this->expect_close(d_dbias.download(), dbias, "matmul dbias");
  }
}

// The MLP's matmul + GELU pair, forward (pre and gelu(pre)) and backward (the gradient of the
// GELU's input), against the CPU's separate matmul and GELU. In bf16/fp16 a hidden width that is a
// multiple of 8 takes cuBLASLt's GELU epilogues; 20 breaks their aux leading-dimension rule and
// takes the separate GELU kernels (as fp32 always does): both must give the same results.
// Real GPU only: cuBLASLt's GELU_AUX epilogues and their aux leading-dimension rule (emulated).
TYPED_TEST(GpuKernelsTest, MatmulWithGeluMatchesCpuMatmulThenGeluFusedOrNot) {
  using F = TypeParam;
  for (const int H : {4 * kC, 20}) {
    const std::string what = "hidden " + std::to_string(H) + ": ";
    constexpr int C = kC;
    // Forward: pre[N, H] = inp[N, C] · w_fc[C, H] + b_fc, act = gelu(pre).
    Vec inp = random_vec(kN * C, 61);
    Vec w_fc = random_vec(static_cast<std::size_t>(C) * H, 62, 0.2);
    Vec b_fc = random_vec(H, 63);
    Vec pre(kN * H), act(kN * H);
    DeviceTensor<F> d_inp(inp), d_w_fc(w_fc), d_b_fc(b_fc), d_pre(pre), d_act(act);
    // Backward of out[N, C] = act · w_proj[H, C] + b_proj: dpre = (dout · w_projᵀ) ⊙ gelu'(pre).
    Vec w_proj = random_vec(static_cast<std::size_t>(H) * C, 64, 0.2);
    Vec dout = random_vec(kN * C, 65);
    Vec dpre = random_vec(kN * H, 66);  // garbage: must be overwritten
    Vec dw_proj = random_vec(w_proj.size(), 67);
    Vec db_proj = random_vec(C, 68);
    DeviceTensor<F> d_w_proj(w_proj), d_dout(dout), d_dpre(dpre), d_dw_proj(dw_proj),
        d_db_proj(db_proj);
    autotrain::gpu::DeviceBuffer scratch(gpu::matmul_backward_scratch_floats(kN, C) *
                                         sizeof(float));
    const gpu::BlasHandle blas;

    gpu::matmul_gelu_forward(blas, d_act.get(), d_pre.get(), d_inp.get(), d_w_fc.get(),
                             d_b_fc.get(), kN, C, H, this->stream());
    gpu::matmul_backward(blas, d_dpre.get(), d_dw_proj.get(), d_db_proj.get(), d_dout.get(),
                         d_act.get(), d_w_proj.get(), scratch.as<float>(), kN, H, C, this->stream(),
                         d_pre.get());
    this->sync();
    matmul_forward(pre.data(), inp.data(), w_fc.data(), b_fc.data(), kN, C, H);
    gelu_forward(act.data(), pre.data(), kN * H);
    // The CPU backward reads the GPU's act and pre, so each side differentiates the same values.
    const Vec gpu_act = d_act.download();
    const Vec gpu_pre = d_pre.download();
    Vec dact(kN * H);
    matmul_backward(dact.data(), dw_proj.data(), db_proj.data(), dout.data(), gpu_act.data(),
                    w_proj.data(), kN, H, C);
    gelu_backward(dpre.data(), gpu_pre.data(), dact.data(), kN * H);
    this->expect_close(gpu_pre, pre, what + "pre (the GELU's input)");
    this->expect_close(gpu_act, act, what + "gelu(pre)");
    this->expect_close(d_dpre.download(), dpre, what + "dpre");
    this->expect_close(d_dw_proj.download(), dw_proj, what + "dweight");
    this->expect_close(d_db_proj.download(), db_proj, what + "dbias");
  }
}

// Real GPU only: cuBLAS's transposes, alpha and beta = 1 accumulation (the emulator's own GEMM).
TYPED_TEST(GpuKernelsTest, GemmMatchesCpuForEveryTransposePairOverwritingAndAccumulating) {
  using F = TypeParam;
  constexpr std::size_t M = kN, N = 48, K = kC;
  // Leading dimensions wider than the rows (and whole 16-byte multiples): strides are honoured and
  // the padding columns are left alone.
  const auto ld_for = [](std::size_t columns) { return (columns + 7) / 8 * 8 + 8; };
  const gpu::BlasHandle blas;
  std::uint32_t seed = 80;
  for (const Transpose ta : {Transpose::no, Transpose::yes}) {
    for (const Transpose tb : {Transpose::no, Transpose::yes}) {
      for (const double beta : {0.0, 1.0}) {
        // alpha 1 overwriting; LoRA's scale (alpha 2, exact in every type) accumulating.
        const double alpha = beta == 0.0 ? 1.0 : 2.0;
        // Stored shapes: op(a) is [M, K], so a is [K, M] when transposed; likewise b.
        const std::size_t a_rows = ta == Transpose::no ? M : K;
        const std::size_t lda = ld_for(ta == Transpose::no ? K : M);
        const std::size_t b_rows = tb == Transpose::no ? K : N;
        const std::size_t ldb = ld_for(tb == Transpose::no ? N : K);
        const std::size_t ldc = ld_for(N);
        Vec a = random_vec(a_rows * lda, ++seed);
        Vec b = random_vec(b_rows * ldb, ++seed, 0.2);
        Vec c = random_vec(M * ldc, ++seed);  // accumulated into, or garbage to overwrite
        DeviceTensor<F> d_a(a), d_b(b), d_c(c);

        gpu::gemm(blas, ta, tb, M, N, K, static_cast<float>(alpha), d_a.get(), lda, d_b.get(), ldb,
                  static_cast<float>(beta), d_c.get(), ldc, this->stream());
        this->sync();
        gemm<double>(ta, tb, M, N, K, alpha, a.data(), lda, b.data(), ldb, beta, c.data(), ldc);
        this->expect_close(d_c.download(), c,
                           std::string("gemm ta=") + (ta == Transpose::yes ? "T" : "N") +
                               " tb=" + (tb == Transpose::yes ? "T" : "N") +
                               " beta=" + (beta == 0.0 ? "0" : "1"));
      }
    }
  }
}

// Attention runs at three shapes: the tiny one; T = 37 (> 32 and not a multiple of 8: rows span
// two warp strides and the gemms get ragged edges); T = 128 with HS = 64 (GPT-2's head size).
struct AttentionShape {
  int B, T, C, NH;
  std::size_t tokens() const { return static_cast<std::size_t>(B) * T; }
  std::size_t att_size() const { return static_cast<std::size_t>(B) * NH * T * T; }
};
constexpr AttentionShape kTinyAttention{kB, kT, kC, kNH};
constexpr AttentionShape kRaggedAttention{2, 37, 64, 4};
constexpr AttentionShape kLongAttention{2, 128, 128, 2};

enum class AttentionPath { dispatched, fast, reference };

// What attention forward and backward produce, on the host.
struct AttentionResult {
  Vec att;   // [B, NH, T, T]
  Vec out;   // [B, T, C]
  Vec dqkv;  // [B, T, 3C]
};

// Random qkv and dout for `shape`; DeviceTensor rounds them in place to F.
struct AttentionInputs {
  explicit AttentionInputs(const AttentionShape& shape)
      : qkv(random_vec(shape.tokens() * 3 * shape.C, 31)),
        dout(random_vec(shape.tokens() * shape.C, 32)) {}
  Vec qkv;
  Vec dout;
};

// One GPU path's forward then backward. dqkv and the scratch start as garbage, so a path that
// accumulates or leaves elements unwritten fails.
template <typename F>
AttentionResult gpu_attention(AttentionPath path, const AttentionShape& s, AttentionInputs& in,
                              cudaStream_t stream) {
  Vec dqkv = random_vec(in.qkv.size(), 33);
  Vec scratch = random_vec(s.att_size(), 34);
  Vec out = random_vec(s.tokens() * s.C, 35);
  Vec att = random_vec(s.att_size(), 36);  // every element is written, zeros above the diagonal
  DeviceTensor<F> d_qkv(in.qkv), d_dout(in.dout), d_dqkv(dqkv), d_out(out), d_att(att),
      d_scratch(scratch);
  if (path == AttentionPath::fast) {
    gpu::attention_forward_fast(d_out.get(), d_att.get(), d_qkv.get(), s.B, s.T, s.C, s.NH, stream);
    gpu::attention_backward_fast(d_dqkv.get(), d_scratch.get(), d_dout.get(), d_qkv.get(),
                                 d_att.get(), s.B, s.T, s.C, s.NH, stream);
  } else if (path == AttentionPath::reference) {
    gpu::attention_forward_reference(d_out.get(), d_att.get(), d_qkv.get(), s.B, s.T, s.C, s.NH,
                                     stream);
    gpu::attention_backward_reference(d_dqkv.get(), d_scratch.get(), d_dout.get(), d_qkv.get(),
                                      d_att.get(), s.B, s.T, s.C, s.NH, stream);
  } else {
    gpu::attention_forward(d_out.get(), d_att.get(), d_qkv.get(), s.B, s.T, s.C, s.NH, stream);
    gpu::attention_backward(d_dqkv.get(), d_scratch.get(), d_dout.get(), d_qkv.get(), d_att.get(),
                            s.B, s.T, s.C, s.NH, stream);
  }
  AT_CUDA_CHECK(cudaStreamSynchronize(stream));
  return AttentionResult{d_att.download(), d_out.download(), d_dqkv.download()};
}

// The CPU's whole-matrix reference kernels (they keep the probabilities the device's paths
// keep) in double on the same (rounded) inputs.
AttentionResult cpu_attention(const AttentionShape& s, const AttentionInputs& in) {
  AttentionResult r{Vec(s.att_size(), 0.0), Vec(s.tokens() * s.C), Vec(in.qkv.size())};
  Vec scratch(s.att_size());
  kernels::reference::attention_forward(r.out.data(), r.att.data(), in.qkv.data(), s.B, s.T, s.C,
                                        s.NH);
  kernels::reference::attention_backward(r.dqkv.data(), scratch.data(), in.dout.data(),
                                         in.qkv.data(), r.att.data(), s.B, s.T, s.C, s.NH);
  return r;
}

template <typename F>
void expect_attention_matches_cpu(AttentionPath path, const AttentionShape& s,
                                  cudaStream_t stream) {
  AttentionInputs in(s);
  const AttentionResult gpu_result = gpu_attention<F>(path, s, in, stream);
  const AttentionResult cpu_result = cpu_attention(s, in);
  const std::string what = std::string(path == AttentionPath::fast        ? "fast"
                                       : path == AttentionPath::reference ? "reference"
                                                                          : "dispatched") +
                           " attention T=" + std::to_string(s.T) + " ";
  expect_close(gpu_result.att, cpu_result.att, Precision<F>::rtol, Precision<F>::atol,
               what + "att");
  expect_close(gpu_result.out, cpu_result.out, Precision<F>::rtol, Precision<F>::atol,
               what + "out");
  expect_close(gpu_result.dqkv, cpu_result.dqkv, Precision<F>::rtol, Precision<F>::atol,
               what + "dqkv");
}

// Needs no GPU: the choice is made from the environment alone.
TEST(GpuAttentionPath, ReferenceIsSelectedExactlyWhenTheEnvironmentSaysReference) {
  const char* value = std::getenv("AUTOTRAIN_CUDA_ATTENTION");
  EXPECT_EQ(gpu::attention_uses_reference(), value != nullptr && std::string(value) == "reference");
  const std::string choice = value == nullptr ? "" : value;
  EXPECT_EQ(gpu::attention_kind() == gpu::AttentionKind::flash, choice == "flash");
  EXPECT_EQ(gpu::attention_kind() == gpu::AttentionKind::fast, choice == "fast");
  EXPECT_EQ(gpu::attention_kind() == gpu::AttentionKind::automatic,
            choice.empty() || choice == "auto");
}

// Real GPU only: the attention path cuBLAS strided-batched GEMMs feed (emulated GEMMs).
TYPED_TEST(GpuKernelsTest, AttentionMatchesCpuForwardAndBackward) {
  // Whichever path AUTOTRAIN_CUDA_ATTENTION selects (the fast one unless it says reference).
  expect_attention_matches_cpu<TypeParam>(AttentionPath::dispatched, kTinyAttention,
                                          this->stream());
}

TYPED_TEST(GpuKernelsTest, AttentionFastPathMatchesCpuAtTinyAndRaggedShapes) {
  expect_attention_matches_cpu<TypeParam>(AttentionPath::fast, kTinyAttention, this->stream());
  expect_attention_matches_cpu<TypeParam>(AttentionPath::fast, kRaggedAttention, this->stream());
}

// Real GPU only: the reference path's cuBLAS strided-batched GEMMs (emulated).
TYPED_TEST(GpuKernelsTest, AttentionReferencePathMatchesCpuAtTinyAndRaggedShapes) {
  expect_attention_matches_cpu<TypeParam>(AttentionPath::reference, kTinyAttention, this->stream());
  expect_attention_matches_cpu<TypeParam>(AttentionPath::reference, kRaggedAttention,
                                          this->stream());
}

TYPED_TEST(GpuKernelsTest, AttentionFastPathMatchesReferencePathAtT128) {
  using F = TypeParam;
  AttentionInputs in(kLongAttention);
  const AttentionResult fast =
      gpu_attention<F>(AttentionPath::fast, kLongAttention, in, this->stream());
  const AttentionResult reference =
      gpu_attention<F>(AttentionPath::reference, kLongAttention, in, this->stream());
  this->expect_close(fast.att, reference.att, "attention T=128 fast vs reference att");
  this->expect_close(fast.out, reference.out, "attention T=128 fast vs reference out");
  this->expect_close(fast.dqkv, reference.dqkv, "attention T=128 fast vs reference dqkv");
}

// Flash attention (bf16/fp16, head sizes 16..64 in steps of 16) against the CPU in double: T = 37
// (HS = 16, ragged tiles), T = 100 (HS = 64, a partial last tile of each size) and T = 128.
// dqkv starts as garbage, so an element the kernels leave unwritten fails.
// Real GPU only: mma.sync and ldmatrix fragment layouts (the emulator follows our reading of the
// PTX ISA).
TYPED_TEST(GpuKernelsTest, FlashAttentionMatchesCpuForwardAndBackward) {
  using F = TypeParam;
  if constexpr (sizeof(F) != 2) {
    EXPECT_FALSE(gpu::flash_attention_supports(sizeof(F), 128, 2)) << "flash is 16-bit only";
  } else {
    EXPECT_FALSE(gpu::flash_attention_supports(sizeof(F), 80, 1)) << "head size 80";
    EXPECT_FALSE(gpu::flash_attention_supports(sizeof(F), 40, 2)) << "head size 20";
    for (const AttentionShape& s :
         {kRaggedAttention, AttentionShape{1, 100, 128, 2}, kLongAttention}) {
      ASSERT_TRUE(gpu::flash_attention_supports(sizeof(F), s.C, s.NH));
      AttentionInputs in(s);
      const AttentionResult cpu = cpu_attention(s, in);
      const std::size_t rows = static_cast<std::size_t>(s.B) * s.NH * s.T;
      Vec out = random_vec(s.tokens() * s.C, 35);
      Vec dqkv = random_vec(in.qkv.size(), 33);
      Vec stats = random_vec(rows, 37);
      DeviceTensor<F> d_qkv(in.qkv), d_dout(in.dout), d_out(out), d_dqkv(dqkv);
      DeviceTensor<float> d_lse(stats), d_delta(stats);
      gpu::flash_attention_forward(d_out.get(), d_lse.get(), d_qkv.get(), s.B, s.T, s.C, s.NH,
                                   this->stream());
      gpu::flash_attention_backward(d_dqkv.get(), d_delta.get(), d_dout.get(), d_qkv.get(),
                                    d_out.get(), d_lse.get(), s.B, s.T, s.C, s.NH, this->stream());
      this->sync();
      const std::string what = "flash attention T=" + std::to_string(s.T) + " ";
      this->expect_close(d_out.download(), cpu.out, what + "out");
      this->expect_close(d_dqkv.download(), cpu.dqkv, what + "dqkv");
    }
  }
}

// `first` = 0: all 1000 elements, packed. `first` = 1: elements [1, 1000), pointers one element
// past a 16-byte boundary, scalar.
TYPED_TEST(GpuKernelsTest, GeluMatchesCpuForwardAndBackward) {
  using F = TypeParam;
  constexpr std::size_t n = 1000;
  for (const std::size_t first : {0, 1}) {
    const std::string where = " from element " + std::to_string(first);
    Vec inp = random_vec(n, 41, 2.0);
    Vec dout = random_vec(n, 42);
    Vec out(n), dinp = random_vec(n, 43);
    DeviceTensor<F> d_inp(inp), d_dout(dout), d_out(out), d_dinp(dinp);

    gpu::gelu_forward(d_out.get() + first, d_inp.get() + first, n - first, this->stream());
    gpu::gelu_backward(d_dinp.get() + first, d_inp.get() + first, d_dout.get() + first, n - first,
                       this->stream());
    this->sync();
    gelu_forward(out.data() + first, inp.data() + first, n - first);
    gelu_backward(dinp.data() + first, inp.data() + first, dout.data() + first, n - first);
    this->expect_close(d_out.download(), out, "gelu out" + where);
    this->expect_close(d_dinp.download(), dinp, "gelu dinp" + where);
  }
}

// LoRA's adapter-dropout factors: the kernel draws DropoutHash's mask (the CPU's) element for
// element, so v = 1 gives back f itself (kept_factor rounded to F, or -1 exactly); it scales a
// random v or adds the product into out; the share dropped is p (p = 0 drops nothing, p = 1
// everything). Rows past one block's threads and from a row offset, as a micro-batch sits in the
// global batch.
TYPED_TEST(GpuKernelsTest, DropoutFactorsDrawTheCpusMaskAndScaleOrAdd) {
  using F = TypeParam;
  constexpr std::size_t rows = 37, columns = 300, n = rows * columns;
  for (const double p : {0.0, 0.3, 1.0}) {
    const std::string where = " (p = " + std::to_string(p) + ")";
    const DropoutHash mask{hash_combine(7, 11), 1000, DropoutHash::threshold_of(p)};
    const double kept_factor = p < 1 ? p / (1 - p) : 0.0;
    const double f_kept = Precision<F>::decode(Precision<F>::encode(kept_factor));
    Vec ones(n, 1.0), v = random_vec(n, 51), out = random_vec(n, 52), f(n), scaled(n), added(n);
    DeviceTensor<F> d_ones(ones), d_v(v), d_out(out);
    std::size_t dropped = 0;
    for (std::size_t i = 0; i < rows; ++i) {
      for (std::size_t j = 0; j < columns; ++j) {
        const std::size_t e = i * columns + j;
        const bool kept = mask.kept(mask.row_key(i), j);
        dropped += kept ? 0 : 1;
        f[e] = kept ? f_kept : -1.0;
        scaled[e] = v[e] * (kept ? kept_factor : -1.0);
        added[e] = out[e] + scaled[e];
      }
    }
    gpu::dropout_factors(d_ones.get(), d_ones.get(), rows, columns, mask,
                         static_cast<float>(kept_factor), false, this->stream());
    gpu::dropout_factors(d_out.get(), d_v.get(), rows, columns, mask,
                         static_cast<float>(kept_factor), true, this->stream());
    gpu::dropout_factors(d_v.get(), d_v.get(), rows, columns, mask, static_cast<float>(kept_factor),
                         false, this->stream());
    this->sync();
    EXPECT_EQ(d_ones.download(), f) << "the factors" << where;
    this->expect_close(d_v.download(), scaled, "v * f" + where);
    this->expect_close(d_out.download(), added, "out + v * f" + where);
    const double share = static_cast<double>(dropped) / n;
    EXPECT_NEAR(share, p, 0.03) << "the share of elements dropped" << where;
  }
}

// The device engine's helpers: the fp32 -> F cast rounds exactly as the CPU's conversion, the
// sum of squares accumulates over calls (several blocks, fp32 partials) to fp32 accuracy,
// add_into adds a reduced part into a gradient shard, and cast_to_float / accumulate_into widen F
// gradients into fp32 exactly.
TYPED_TEST(GpuKernelsTest, CastSumOfSquaresAddIntoAndWideningMatchTheCpu) {
  using F = TypeParam;
  // More than one block's worth of the first pass; odd, so the packed paths leave a scalar tail.
  constexpr std::size_t n = 300001;
  const Vec master = random_vec(n, 51);
  std::vector<float> master32(master.begin(), master.end());
  autotrain::gpu::DeviceBuffer d_master(n * sizeof(float));
  d_master.copy_from_host(master32.data(), n * sizeof(float));
  Vec cast(n);
  DeviceTensor<F> d_cast(cast);
  gpu::cast_from_float(d_cast.get(), d_master.as<float>(), n, this->stream());
  this->sync();
  const Vec cast_back = d_cast.download();
  for (std::size_t i = 0; i < n; ++i) {
    const double expected = Precision<F>::decode(Precision<F>::encode(master32[i]));
    ASSERT_EQ(cast_back[i], expected) << "cast element " << i;
  }

  Vec x = random_vec(n, 52);
  Vec y = random_vec(n / 3, 53);
  DeviceTensor<F> d_x(x), d_y(y);
  autotrain::gpu::DeviceBuffer total(sizeof(double));
  autotrain::gpu::DeviceBuffer scratch(gpu::kSumOfSquaresScratch * sizeof(float));
  total.zero(this->stream());
  gpu::sum_of_squares(total.as<double>(), d_x.get(), n, scratch.as<float>(), this->stream());
  // y from its second element: not 16-byte aligned, the scalar path.
  gpu::sum_of_squares(total.as<double>(), d_y.get() + 1, y.size() - 1, scratch.as<float>(),
                      this->stream());
  this->sync();
  double gpu_sum = 0;
  total.copy_to_host(&gpu_sum, sizeof gpu_sum);
  double cpu_sum = 0;
  for (double v : x) cpu_sum += v * v;
  for (std::size_t i = 1; i < y.size(); ++i) cpu_sum += y[i] * y[i];
  EXPECT_NEAR(gpu_sum, cpu_sum, 1e-5 * cpu_sum) << "sum of squares over two calls";

  // Packed with a scalar tail (1001 elements), then scalar from a misaligned second element.
  for (const std::size_t first : {0, 1}) {
    Vec shard = random_vec(1001, 54);
    Vec part = random_vec(1001, 55);
    DeviceTensor<F> d_shard(shard), d_part(part);
    gpu::add_into(d_shard.get() + first, d_part.get() + first, shard.size() - first,
                  this->stream());
    this->sync();
    for (std::size_t i = first; i < shard.size(); ++i) shard[i] += part[i];
    this->expect_close(d_shard.download(), shard, "add_into from element " + std::to_string(first));
  }

  // The widening of 16-bit gradients into fp32: exact, and an fp32 sum rounded once.
  for (const std::size_t first : {0, 1}) {
    Vec part = random_vec(1001, 56);
    Vec into = random_vec(1001, 57);
    DeviceTensor<F> d_part(part);
    DeviceTensor<float> d_into(into), d_wide(into);
    gpu::cast_to_float(d_wide.get() + first, d_part.get() + first, part.size() - first,
                       this->stream());
    gpu::accumulate_into(d_into.get() + first, d_part.get() + first, part.size() - first,
                         this->stream());
    this->sync();
    const Vec wide = d_wide.download();
    const Vec sums = d_into.download();
    for (std::size_t i = first; i < part.size(); ++i) {
      ASSERT_EQ(wide[i], part[i]) << "cast_to_float element " << i << " from " << first;
      const float sum = static_cast<float>(into[i]) + static_cast<float>(part[i]);
      ASSERT_EQ(sums[i], double{sum}) << "accumulate_into element " << i << " from " << first;
    }
  }
}

// `first` = 0: packed; `first` = 1: pointers one element past a 16-byte boundary, scalar.
TYPED_TEST(GpuKernelsTest, ResidualForwardMatchesCpu) {
  using F = TypeParam;
  constexpr std::size_t n = kN * kC;
  for (const std::size_t first : {0, 1}) {
    const std::string where = " from element " + std::to_string(first);
    Vec a = random_vec(n, 51), b = random_vec(n, 52), out(n);
    DeviceTensor<F> d_a(a), d_b(b), d_out(out);

    const std::size_t count = n - first;
    gpu::residual_forward(d_out.get() + first, d_a.get() + first, d_b.get() + first, count,
                          this->stream());
    this->sync();
    residual_forward(out.data() + first, a.data() + first, b.data() + first, count);
    this->expect_close(d_out.download(), out, "residual out" + where);
  }
}

// Vp = 64: packed rows, the last real pack partly padding (V = 50). Vp = 61: rows that are not
// 16-byte multiples, the scalar path.
// Two rows carry no loss (kIgnoreTarget).
TYPED_TEST(GpuKernelsTest, CrossEntropyMatchesCpuAndIgnoresPaddedColumnsAndIgnoredTargets) {
  using F = TypeParam;
  for (const int Vp : {kVp, 61}) {
    const std::string shape = " Vp=" + std::to_string(Vp);
    auto targets = random_ids(kN, kV, 61);
    targets[1] = targets[kN - 2] = kIgnoreTarget;
    Vec logits = random_vec(kN * Vp, 62, 2.0);
    for (std::size_t n = 0; n < kN; ++n) {
      for (int v = kV; v < Vp; ++v) logits[n * Vp + v] = 100.0;  // would dominate if read
    }
    Vec dlogits = random_vec(logits.size(), 63);  // garbage: must be overwritten
    Vec losses(kN), lse(kN);
    const double dloss = 1.0 / static_cast<double>(kN);
    const auto d_targets = upload_ids(targets);
    DeviceTensor<F> d_logits(logits), d_dlogits(dlogits);
    DeviceTensor<float> d_losses(losses), d_lse(lse);

    gpu::crossentropy_forward(d_losses.get(), d_lse.get(), d_logits.get(),
                              d_targets.as<std::int32_t>(), kN, kV, Vp, this->stream());
    gpu::crossentropy_backward(d_dlogits.get(), d_logits.get(), d_lse.get(),
                               d_targets.as<std::int32_t>(), static_cast<float>(dloss), kN, kV, Vp,
                               this->stream());
    this->sync();
    crossentropy_forward(losses.data(), lse.data(), logits.data(), targets.data(), kN, kV, Vp);
    crossentropy_backward(dlogits.data(), logits.data(), lse.data(), targets.data(), dloss, kN, kV,
                          Vp);
    // Losses and lse are fp32 for every element type; the inputs were already rounded.
    expect_close(d_losses.download(), losses, 1e-4, 1e-5, "crossentropy losses" + shape);
    expect_close(d_lse.download(), lse, 1e-4, 1e-5, "crossentropy lse" + shape);
    const Vec gpu_dlogits = d_dlogits.download();
    this->expect_close(gpu_dlogits, dlogits, "crossentropy dlogits" + shape);
    for (std::size_t n = 0; n < kN; ++n) {
      for (int v = kV; v < Vp; ++v) {
        ASSERT_EQ(gpu_dlogits[n * Vp + v], 0.0)
            << "padded column " << v << " of row " << n << shape;
      }
    }
  }
}

// `first` = 0: 777 elements, packed with a scalar tail; `first` = 1: from the second element, every
// pointer off its 16-byte boundary, scalar.
TYPED_TEST(GpuKernelsTest, AdamWMatchesTheCpuUpdateAndWritesTheComputeCopy) {
  using G = TypeParam;
  constexpr std::size_t n = 777;
  for (const std::size_t first : {0, 1}) {
    const std::string where = " from element " + std::to_string(first);
    Vec params = random_vec(n, 71);
    Vec grads = random_vec(n, 72);
    Vec m = random_vec(n, 73, 0.1);
    Vec v = random_vec(n, 74, 0.1);
    for (auto& x : v) x = x * x;  // second moments are non-negative
    Vec copy(n, 0.0);
    DeviceTensor<float> d_params(params), d_m(m), d_v(v);
    DeviceTensor<float> d_grads(grads);  // the engine's gradients are fp32 for every G
    DeviceTensor<G> d_copy(copy);
    gpu::AdamWSettings settings;
    settings.lr = 1e-2f;
    settings.weight_decay = 0.1f;
    settings.grad_scale = 0.5f;
    settings.step = 3;

    gpu::adamw_update(d_params.get() + first, d_copy.get() + first, d_grads.get() + first,
                      d_m.get() + first, d_v.get() + first, n - first, settings, this->stream());
    this->sync();
    // optim/optimizer.cpp's AdamW, in double.
    const double c1 = 1.0 - std::pow(double{settings.beta1}, 3.0);
    const double c2 = 1.0 - std::pow(double{settings.beta2}, 3.0);
    for (std::size_t i = first; i < n; ++i) {
      const double g = grads[i] * settings.grad_scale;
      m[i] = settings.beta1 * m[i] + (1.0 - settings.beta1) * g;
      v[i] = settings.beta2 * v[i] + (1.0 - settings.beta2) * g * g;
      params[i] -= settings.lr * ((m[i] / c1) / (std::sqrt(v[i] / c2) + settings.eps) +
                                  settings.weight_decay * params[i]);
      copy[i] = params[i];
    }
    // Master weights and moments are fp32 for every gradient type.
    expect_close(d_params.download(), params, 1e-5, 1e-6, "adamw params" + where);
    expect_close(d_m.download(), m, 1e-5, 1e-6, "adamw m" + where);
    expect_close(d_v.download(), v, 1e-5, 1e-7, "adamw v" + where);
    this->expect_close(d_copy.download(), copy, "adamw compute copy" + where);
  }
}

// bitsandbytes' dynamic map (optim/blockwise_8bit.hpp, written again here: the kernels layer is
// below optim): signed for m, unsigned for v.
std::vector<float> dynamic_map(bool is_signed) {
  std::vector<double> entries{0.0, 1.0};
  for (int i = 0; i < 7; ++i) {
    const int k = is_signed ? 1 << i : 1 << (i + 1);
    const auto boundary = [&](int j) { return j == k ? 1.0 : 0.1 + j * ((1.0 - 0.1) / k); };
    for (int j = 0; j < k; ++j) {
      const double mean = std::pow(10.0, i - 6) * ((boundary(j) + boundary(j + 1)) / 2.0);
      entries.push_back(mean);
      if (is_signed) entries.push_back(-mean);
    }
  }
  std::sort(entries.begin(), entries.end());
  return {entries.begin(), entries.end()};
}

std::uint8_t nearest_code(const float* map, float x) {
  unsigned low = 0;
  for (unsigned step = 128; step > 0; step >>= 1) low += map[low + step] <= x ? step : 0;
  const unsigned high = low < 255 ? low + 1 : 255;
  return static_cast<std::uint8_t>(map[high] - x < x - map[low] ? high : low);
}

// Two whole state blocks and a short one; runs with and without decay and padding after them.
// Against the CPU's 8-bit step written in float with the same operations: the same bits.
TYPED_TEST(GpuKernelsTest, AdamW8bitMatchesTheCpuStepBitForBit) {
  using G = TypeParam;
  constexpr std::size_t n = 2 * gpu::kAdamW8bitBlock + 300, blocks = 3;
  const std::vector<gpu::AdamW8bitRun> runs = {{0, 3000, 1}, {3000, 4200, 0}};  // 4200..: padding
  std::vector<float> maps = dynamic_map(true);
  const std::vector<float> unsigned_map = dynamic_map(false);
  maps.insert(maps.end(), unsigned_map.begin(), unsigned_map.end());
  ASSERT_EQ(maps.size(), 512u);
  Vec params = random_vec(n, 81);
  Vec grads = random_vec(n, 82);
  Vec copy(n, 0.0);
  std::mt19937 generator(83);
  std::vector<std::uint8_t> m(n), v(n);
  for (std::size_t i = 0; i < n; ++i) {
    m[i] = static_cast<std::uint8_t>(generator() % 256);
    v[i] = static_cast<std::uint8_t>(generator() % 256);
  }
  std::vector<float> m_absmax = {0.01f, 0.02f, 0.0f}, v_absmax = {1e-4f, 3e-4f, 0.0f};
  DeviceTensor<float> d_params(params), d_grads(grads);
  DeviceTensor<G> d_copy(copy);
  autotrain::gpu::DeviceBuffer d_m(n), d_v(n), d_m_absmax(blocks * sizeof(float)),
      d_v_absmax(blocks * sizeof(float)), d_maps(512 * sizeof(float)),
      d_runs(runs.size() * sizeof(gpu::AdamW8bitRun));
  d_m.copy_from_host(m.data(), n);
  d_v.copy_from_host(v.data(), n);
  d_m_absmax.copy_from_host(m_absmax.data(), blocks * sizeof(float));
  d_v_absmax.copy_from_host(v_absmax.data(), blocks * sizeof(float));
  d_maps.copy_from_host(maps.data(), maps.size() * sizeof(float));
  d_runs.copy_from_host(runs.data(), runs.size() * sizeof(gpu::AdamW8bitRun));
  gpu::AdamWSettings settings;
  settings.lr = 1e-2f;
  settings.weight_decay = 0.1f;
  settings.grad_scale = 0.5f;
  settings.step = 3;
  gpu::adamw_8bit_update(d_params.get(), d_copy.get(), d_grads.get(), d_m.as<std::uint8_t>(),
                         d_v.as<std::uint8_t>(), d_m_absmax.as<float>(), d_v_absmax.as<float>(), n,
                         d_runs.as<gpu::AdamW8bitRun>(), static_cast<int>(runs.size()),
                         d_maps.as<float>(), settings, this->stream());
  this->sync();

  // The CPU's step (optim/adamw_8bit.cpp, adamw_math.hpp) in float.
  const auto correction = [](float beta) {
    return static_cast<float>(1.0 - std::pow(double{beta}, 3.0));
  };
  const float c1 = correction(settings.beta1), c2 = correction(settings.beta2);
  std::vector<float> p(params.begin(), params.end()), m_new(n, 0.0f), v_new(n, 0.0f);
  for (std::size_t i = 0; i < 4200; ++i) {
    const std::size_t b = i / gpu::kAdamW8bitBlock;
    const float decay = i < 3000 ? settings.weight_decay : 0.0f;
    const float grad = static_cast<float>(grads[i]) * settings.grad_scale;
    m_new[i] = std::fma(settings.beta1, maps[m[i]] * m_absmax[b], (1.0f - settings.beta1) * grad);
    v_new[i] = std::fma(settings.beta2, maps[256 + v[i]] * v_absmax[b],
                        ((1.0f - settings.beta2) * grad) * grad);
    const float step = (m_new[i] / c1) / (std::sqrt(v_new[i] / c2) + settings.eps);
    p[i] = std::fma(-settings.lr, std::fma(decay, p[i], step), p[i]);
  }
  std::vector<std::uint8_t> gpu_m(n), gpu_v(n);
  std::vector<float> gpu_m_absmax(blocks), gpu_v_absmax(blocks);
  d_m.copy_to_host(gpu_m.data(), n);
  d_v.copy_to_host(gpu_v.data(), n);
  d_m_absmax.copy_to_host(gpu_m_absmax.data(), blocks * sizeof(float));
  d_v_absmax.copy_to_host(gpu_v_absmax.data(), blocks * sizeof(float));
  const Vec gpu_params = d_params.download();
  for (std::size_t b = 0; b < blocks; ++b) {
    const std::size_t begin = b * gpu::kAdamW8bitBlock;
    const std::size_t end = std::min(n, begin + gpu::kAdamW8bitBlock);
    float m_max = 0, v_max = 0;
    for (std::size_t i = begin; i < end; ++i) {
      m_max = std::max(m_max, std::fabs(m_new[i]));
      v_max = std::max(v_max, std::fabs(v_new[i]));
    }
    ASSERT_EQ(gpu_m_absmax[b], m_max) << "block " << b;
    ASSERT_EQ(gpu_v_absmax[b], v_max) << "block " << b;
    for (std::size_t i = begin; i < end; ++i) {
      ASSERT_EQ(gpu_params[i], static_cast<double>(p[i])) << i;
      ASSERT_EQ(gpu_m[i], nearest_code(maps.data(), m_new[i] / (m_max > 0 ? m_max : 1.0f))) << i;
      ASSERT_EQ(gpu_v[i], nearest_code(maps.data() + 256, v_new[i] / (v_max > 0 ? v_max : 1.0f)))
          << i;
    }
  }
  Vec expected_copy(p.begin(), p.end());
  for (std::size_t i = 4200; i < n; ++i) expected_copy[i] = 0.0;  // padding: never written
  this->expect_close(d_copy.download(), expected_copy, "adamw_8bit compute copy");
}

// Real GPU only: copies from pinned memory that overlap the host (emulated streams run lazily, one
// at a time).
TEST(GpuStagedCopy, RoundTripsAnySizeThroughTwoSmallChunksInBothDirections) {
  if (autotrain::gpu::device_count() == 0) GTEST_SKIP() << "no CUDA device: StagedCopy not tested";
  const autotrain::gpu::Stream stream;
  autotrain::gpu::StagedCopy staging(
      64);  // tiny chunks: most copies take many, the last one partial
  EXPECT_EQ(staging.pinned_bytes(), 128u);
  for (const std::size_t bytes :
       {std::size_t{0}, std::size_t{1}, std::size_t{64}, std::size_t{129}, std::size_t{1000}}) {
    std::vector<unsigned char> host(bytes);
    for (std::size_t i = 0; i < bytes; ++i) host[i] = static_cast<unsigned char>(i * 37 + 11);
    autotrain::gpu::DeviceBuffer device(bytes + 1);
    staging.to_device(device.data(), host.data(), bytes, stream.get());
    // The copy may reuse host at once: later writes to it must not reach the device.
    std::fill(host.begin(), host.end(), 0);
    std::vector<unsigned char> back(bytes, 0xEE);
    staging.to_host(back.data(), device.data(), bytes, stream.get());
    for (std::size_t i = 0; i < bytes; ++i) {
      ASSERT_EQ(back[i], static_cast<unsigned char>(i * 37 + 11))
          << "byte " << i << " of " << bytes;
    }
  }
}

}  // namespace
}  // namespace autotrain::kernels::gpu_kernels_test

#endif  // AUTOTRAIN_HAVE_CUDA
