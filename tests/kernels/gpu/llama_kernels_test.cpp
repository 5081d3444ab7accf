// The CUDA kernels of the Llama family (RMSNorm, RoPE, SwiGLU, grouped-query attention, flash
// attention with GQA, nn.Linear-layout matmuls) against the CPU kernels, run in double on the
// same inputs rounded first to the GPU's element type, on random inputs, with the tolerances of
// kernels_test.cpp (|gpu - cpu| <= atol + rtol·|cpu|):
//   fp32: rtol 1e-4, atol 1e-5;  fp16: rtol 1e-2, atol 1e-2;  bf16: rtol 5e-2, atol 5e-2.
// fp32 statistics (rstd) are held to 1e-4 / 1e-5 for every element type. Output and gradient
// buffers start from random values, so accumulate (+=), overwrite (=) and "left alone" (the
// columns of a qkv row a per-head kernel does not own) are all checked. GPT-2's (C, NH)
// attention overloads must give exactly the bits of the NKV = NH overloads.
// Shapes are tiny (the emulator runs every CUDA thread as a fiber). Skips with a message in
// builds without CUDA and on machines without a GPU.
#include <gtest/gtest.h>

#ifndef AUTOTRAIN_HAVE_CUDA

TEST(GpuLlamaKernels, SkippedBecauseTheBuildHasNoCuda) {
  GTEST_SKIP() << "this build has no CUDA (AUTOTRAIN_CUDA=off or no toolkit): CUDA kernels not "
                  "tested";
}

#else

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "../attention_reference.hpp"
#include "autotrain/core/dtype.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/gpu/check.hpp"
#include "autotrain/core/gpu/device.hpp"
#include "autotrain/kernels/attention.hpp"
#include "autotrain/kernels/gpu/attention.hpp"
#include "autotrain/kernels/gpu/flash_attention.hpp"
#include "autotrain/kernels/gpu/matmul.hpp"
#include "autotrain/kernels/gpu/rmsnorm.hpp"
#include "autotrain/kernels/gpu/rope.hpp"
#include "autotrain/kernels/gpu/swiglu.hpp"
#include "autotrain/kernels/matmul.hpp"
#include "autotrain/kernels/rmsnorm.hpp"
#include "autotrain/kernels/rope.hpp"
#include "autotrain/kernels/swiglu.hpp"
#include "gpu/element_types.hpp"
#include "kernel_test_support.hpp"
#include "test_support.hpp"

namespace autotrain::kernels::gpu_llama_kernels_test {
namespace {

using testing::random_vec;

using namespace gpu_test;

template <typename F>
class GpuLlamaKernelsTest : public KernelFixture<F> {};

TYPED_TEST_SUITE(GpuLlamaKernelsTest, autotrain::testing::GpuElementTypes,
                 autotrain::testing::GpuTypeNames);

// One RMSNorm case: `rows` rows of `stride` elements in a buffer, the vectors (r, h) at
// r·stride + offset + h·C; the rest of each row must be left alone.
struct RmsNormCase {
  std::size_t rows;
  int heads;
  int C;
  std::size_t stride;
  std::size_t offset;  // where vector (0, 0) starts: the k part of a qkv row is at NH·HS
  std::string name;
};

template <typename F>
void expect_rmsnorm_matches_cpu(const RmsNormCase& c, cudaStream_t stream) {
  constexpr double eps = 1e-6;
  const std::size_t size = c.rows * c.stride;
  const std::size_t vectors = c.rows * static_cast<std::size_t>(c.heads);
  Vec inp = random_vec(size, 101, 2.0);
  Vec weight = random_vec(static_cast<std::size_t>(c.C), 102);
  Vec out = random_vec(size, 103);  // outside the vectors: must stay as it is
  Vec dout = random_vec(size, 104);
  Vec dinp = random_vec(size, 105);  // accumulated into
  Vec dweight = random_vec(static_cast<std::size_t>(c.C), 106);
  Vec rstd(vectors);
  DeviceTensor<F> d_inp(inp), d_weight(weight), d_out(out), d_dout(dout), d_dinp(dinp),
      d_dweight(dweight);
  DeviceTensor<float> d_rstd(rstd);
  autotrain::gpu::DeviceBuffer scratch(gpu::rmsnorm_backward_scratch_floats(c.rows, c.heads, c.C) *
                                       sizeof(float));

  gpu::rmsnorm_forward(d_out.get() + c.offset, d_rstd.get(), d_inp.get() + c.offset, d_weight.get(),
                       c.rows, c.heads, c.C, c.stride, static_cast<float>(eps), stream);
  gpu::rmsnorm_backward(d_dinp.get() + c.offset, d_dweight.get(), d_dout.get() + c.offset,
                        d_inp.get() + c.offset, d_weight.get(), d_rstd.get(), scratch.as<float>(),
                        c.rows, c.heads, c.C, c.stride, stream);
  AT_CUDA_CHECK(cudaStreamSynchronize(stream));
  rmsnorm_forward(out.data() + c.offset, rstd.data(), inp.data() + c.offset, weight.data(), c.rows,
                  c.heads, c.C, c.stride, eps);
  rmsnorm_backward(dinp.data() + c.offset, dweight.data(), dout.data() + c.offset,
                   inp.data() + c.offset, weight.data(), rstd.data(), c.rows, c.heads, c.C,
                   c.stride);
  expect_close(d_out.download(), out, Precision<F>::rtol, Precision<F>::atol,
               "rmsnorm out " + c.name);
  expect_close(d_rstd.download(), rstd, 1e-4, 1e-5, "rmsnorm rstd (fp32) " + c.name);
  expect_close(d_dinp.download(), dinp, Precision<F>::rtol, Precision<F>::atol,
               "rmsnorm dinp " + c.name);
  expect_close(d_dweight.download(), dweight, Precision<F>::rtol, Precision<F>::atol,
               "rmsnorm dweight " + c.name);
}

// Plain norms: [14, 64] (packed), [150, 34] (scalar; two chunks of dweight partials), [3, 4096]
// (Llama 3 8B's hidden size).
TYPED_TEST(GpuLlamaKernelsTest, RmsNormMatchesCpuOverPlainRows) {
  for (const auto& [rows, C] : {std::pair<std::size_t, int>{14, 64}, {150, 34}, {3, 4096}}) {
    expect_rmsnorm_matches_cpu<TypeParam>(
        RmsNormCase{rows, 1, C, static_cast<std::size_t>(C), 0,
                    "N=" + std::to_string(rows) + " C=" + std::to_string(C)},
        this->stream());
  }
}

// Qwen3's q_norm and k_norm on a qkv buffer [14, (NH + 2·NKV)·HS] with NH = 4, NKV = 2, HS = 16:
// per-head vectors of the q part and, through an offset pointer, of the k part; the other
// columns of each row are left alone. HS = 10 (rows of 80) takes the scalar path.
TYPED_TEST(GpuLlamaKernelsTest, RmsNormMatchesCpuPerHeadOnQkvRowsWithStride) {
  constexpr int NH = 4, NKV = 2;
  for (const int HS : {16, 10}) {
    const auto row = static_cast<std::size_t>(NH + 2 * NKV) * HS;
    const std::string shape = " HS=" + std::to_string(HS);
    expect_rmsnorm_matches_cpu<TypeParam>(RmsNormCase{14, NH, HS, row, 0, "q_norm" + shape},
                                          this->stream());
    expect_rmsnorm_matches_cpu<TypeParam>(
        RmsNormCase{14, NKV, HS, row, static_cast<std::size_t>(NH) * HS, "k_norm" + shape},
        this->stream());
  }
}

TYPED_TEST(GpuLlamaKernelsTest, RmsNormRejectsVectorsWiderThanItsLimit) {
  using F = TypeParam;
  constexpr int C = gpu::kRmsNormMaxChannels + 1;
  try {
    gpu::rmsnorm_forward<F>(nullptr, nullptr, nullptr, nullptr, 1, 1, C,
                            static_cast<std::size_t>(C), 1e-6f, this->stream());
    FAIL() << "C = " << C << " was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(std::to_string(gpu::kRmsNormMaxChannels)),
              std::string::npos)
        << e.what();
  }
}

// Rotates the q and k parts of a packed qkv buffer [B, T, (NH + 2·NKV)·HS] (two calls, the k one
// on an offset pointer) at positions pos0.. (pos0 > 0: a continued sequence), forward on qkv and
// backward on a gradient; the v part must be left alone. HS = 16 takes the packed path, HS = 10
// (half = 5) the scalar one; R < HS rotates the first R dimensions of each head only (partial
// rotary embeddings: packed with R = 16 of 32, scalar with R = 12 of 16).
TYPED_TEST(GpuLlamaKernelsTest, RopeMatchesCpuOnQkvRowsFromAPositionOffset) {
  using F = TypeParam;
  constexpr int B = 2, T = 5, NH = 4, NKV = 2;
  struct Case {
    int HS, R, pos0;
  };
  for (const auto& [HS, R, pos0] :
       {Case{16, 16, 3}, Case{10, 10, 2}, Case{32, 16, 1}, Case{16, 12, 4}}) {
    const std::string shape =
        " HS=" + std::to_string(HS) + " R=" + std::to_string(R) + " pos0=" + std::to_string(pos0);
    const int half = R / 2;
    const int positions = pos0 + T;
    const auto row = static_cast<std::size_t>(NH + 2 * NKV) * HS;
    const auto k_at = static_cast<std::size_t>(NH) * HS;
    std::vector<double> inv_freq(static_cast<std::size_t>(half));
    for (int i = 0; i < half; ++i) inv_freq[i] = std::pow(10000.0, -2.0 * i / R);
    // fp32 tables, as the device model builds them; the CPU reference reads the same values.
    std::vector<float> cos32(static_cast<std::size_t>(positions) * half), sin32(cos32.size());
    rope_tables(cos32.data(), sin32.data(), inv_freq.data(), positions, half);
    Vec cos(cos32.begin(), cos32.end()), sin(sin32.begin(), sin32.end());
    Vec qkv = random_vec(static_cast<std::size_t>(B) * T * row, 111);
    Vec dqkv = random_vec(qkv.size(), 112);
    DeviceTensor<F> d_qkv(qkv), d_dqkv(dqkv);
    DeviceTensor<float> d_cos(cos), d_sin(sin);

    gpu::rope_forward(d_qkv.get(), d_cos.get(), d_sin.get(), B, T, NH, HS, R, row, pos0,
                      this->stream());
    gpu::rope_forward(d_qkv.get() + k_at, d_cos.get(), d_sin.get(), B, T, NKV, HS, R, row, pos0,
                      this->stream());
    gpu::rope_backward(d_dqkv.get(), d_cos.get(), d_sin.get(), B, T, NH, HS, R, row, pos0,
                       this->stream());
    gpu::rope_backward(d_dqkv.get() + k_at, d_cos.get(), d_sin.get(), B, T, NKV, HS, R, row, pos0,
                       this->stream());
    this->sync();
    rope_forward(qkv.data(), cos.data(), sin.data(), B, T, NH, HS, R, row, pos0);
    rope_forward(qkv.data() + k_at, cos.data(), sin.data(), B, T, NKV, HS, R, row, pos0);
    rope_backward(dqkv.data(), cos.data(), sin.data(), B, T, NH, HS, R, row, pos0);
    rope_backward(dqkv.data() + k_at, cos.data(), sin.data(), B, T, NKV, HS, R, row, pos0);
    this->expect_close(d_qkv.download(), qkv, "rope forward" + shape);
    this->expect_close(d_dqkv.download(), dqkv, "rope backward" + shape);
  }
}

// I = 64 takes the packed path, I = 13 the scalar one; dgate_up starts as garbage.
TYPED_TEST(GpuLlamaKernelsTest, SwigluMatchesCpuForwardAndBackward) {
  using F = TypeParam;
  constexpr std::size_t N = 14;
  for (const int I : {64, 13}) {
    const std::string shape = " I=" + std::to_string(I);
    const std::size_t width = static_cast<std::size_t>(I);
    Vec gate_up = random_vec(N * 2 * width, 121, 4.0);
    Vec dout = random_vec(N * width, 122);
    Vec out(N * width);
    Vec dgate_up = random_vec(N * 2 * width, 123);
    DeviceTensor<F> d_gate_up(gate_up), d_dout(dout), d_out(out), d_dgate_up(dgate_up);

    gpu::swiglu_forward(d_out.get(), d_gate_up.get(), N, I, this->stream());
    gpu::swiglu_backward(d_dgate_up.get(), d_dout.get(), d_gate_up.get(), N, I, this->stream());
    this->sync();
    swiglu_forward(out.data(), gate_up.data(), N, I);
    swiglu_backward(dgate_up.data(), dout.data(), gate_up.data(), N, I);
    this->expect_close(d_out.download(), out, "swiglu out" + shape);
    this->expect_close(d_dgate_up.download(), dgate_up, "swiglu dgate_up" + shape);
  }
}

struct GqaShape {
  int B, T, NH, NKV, HS;
  std::size_t tokens() const { return static_cast<std::size_t>(B) * T; }
  std::size_t qkv_size() const { return tokens() * (NH + 2 * NKV) * HS; }
  std::size_t out_size() const { return tokens() * NH * HS; }
  std::size_t att_size() const { return static_cast<std::size_t>(B) * NH * T * T; }
  std::string name() const {
    return "NH=" + std::to_string(NH) + " NKV=" + std::to_string(NKV) +
           " HS=" + std::to_string(HS) + " T=" + std::to_string(T);
  }
};
// Two query heads per key/value head; and one key/value head for 8 query heads (T = 37: rows
// past a warp's 32 lanes).
constexpr GqaShape kPairedHeads{2, 7, 4, 2, 16};
constexpr GqaShape kOneKvHead{2, 37, 8, 1, 16};

enum class Path { dispatched, fast, reference };

struct AttentionResult {
  Vec att, out, dqkv;
};

// One GPU path's forward then backward; out, att, dqkv and the scratch start as garbage. With
// gpt2_signature (NKV = NH only) it calls the (C, NH) overloads.
template <typename F>
AttentionResult gpu_attention(Path path, const GqaShape& s, Vec& qkv, Vec& dout,
                              bool gpt2_signature, cudaStream_t stream) {
  Vec dqkv = random_vec(qkv.size(), 133);
  Vec scratch = random_vec(s.att_size(), 134);
  Vec out = random_vec(s.out_size(), 135);
  Vec att = random_vec(s.att_size(), 136);
  DeviceTensor<F> d_qkv(qkv), d_dout(dout), d_dqkv(dqkv), d_out(out), d_att(att),
      d_scratch(scratch);
  const int C = s.NH * s.HS;
  if (gpt2_signature && path == Path::fast) {
    gpu::attention_forward_fast(d_out.get(), d_att.get(), d_qkv.get(), s.B, s.T, C, s.NH, stream);
    gpu::attention_backward_fast(d_dqkv.get(), d_scratch.get(), d_dout.get(), d_qkv.get(),
                                 d_att.get(), s.B, s.T, C, s.NH, stream);
  } else if (gpt2_signature && path == Path::reference) {
    gpu::attention_forward_reference(d_out.get(), d_att.get(), d_qkv.get(), s.B, s.T, C, s.NH,
                                     stream);
    gpu::attention_backward_reference(d_dqkv.get(), d_scratch.get(), d_dout.get(), d_qkv.get(),
                                      d_att.get(), s.B, s.T, C, s.NH, stream);
  } else if (gpt2_signature) {
    gpu::attention_forward(d_out.get(), d_att.get(), d_qkv.get(), s.B, s.T, C, s.NH, stream);
    gpu::attention_backward(d_dqkv.get(), d_scratch.get(), d_dout.get(), d_qkv.get(), d_att.get(),
                            s.B, s.T, C, s.NH, stream);
  } else if (path == Path::fast) {
    gpu::attention_forward_fast(d_out.get(), d_att.get(), d_qkv.get(), s.B, s.T, s.NH, s.NKV, s.HS,
                                stream);
    gpu::attention_backward_fast(d_dqkv.get(), d_scratch.get(), d_dout.get(), d_qkv.get(),
                                 d_att.get(), s.B, s.T, s.NH, s.NKV, s.HS, stream);
  } else if (path == Path::reference) {
    gpu::attention_forward_reference(d_out.get(), d_att.get(), d_qkv.get(), s.B, s.T, s.NH, s.NKV,
                                     s.HS, stream);
    gpu::attention_backward_reference(d_dqkv.get(), d_scratch.get(), d_dout.get(), d_qkv.get(),
                                      d_att.get(), s.B, s.T, s.NH, s.NKV, s.HS, stream);
  } else {
    gpu::attention_forward(d_out.get(), d_att.get(), d_qkv.get(), s.B, s.T, s.NH, s.NKV, s.HS,
                           stream);
    gpu::attention_backward(d_dqkv.get(), d_scratch.get(), d_dout.get(), d_qkv.get(), d_att.get(),
                            s.B, s.T, s.NH, s.NKV, s.HS, stream);
  }
  AT_CUDA_CHECK(cudaStreamSynchronize(stream));
  return AttentionResult{d_att.download(), d_out.download(), d_dqkv.download()};
}

AttentionResult cpu_attention(const GqaShape& s, const Vec& qkv, const Vec& dout,
                              const AttentionOptions& options = {}) {
  AttentionResult r{Vec(s.att_size()), Vec(s.out_size()), Vec(qkv.size())};
  Vec scratch(s.att_size() * (options.softcap > 0 ? 2 : 1));
  kernels::reference::attention_forward(r.out.data(), r.att.data(), qkv.data(), s.B, s.T, s.NH,
                                        s.NKV, s.HS, options);
  kernels::reference::attention_backward(r.dqkv.data(), scratch.data(), dout.data(), qkv.data(),
                                         r.att.data(), s.B, s.T, s.NH, s.NKV, s.HS, options);
  return r;
}

// Real GPU only: the fast path's strided-batched GEMMs over head groups (emulated GEMMs).
TYPED_TEST(GpuLlamaKernelsTest, GqaAttentionMatchesCpuOnEveryPath) {
  using F = TypeParam;
  for (const GqaShape& s : {kPairedHeads, kOneKvHead}) {
    for (const Path path : {Path::fast, Path::reference, Path::dispatched}) {
      const std::string what = std::string(path == Path::fast        ? "fast"
                                           : path == Path::reference ? "reference"
                                                                     : "dispatched") +
                               " attention " + s.name() + " ";
      Vec qkv = random_vec(s.qkv_size(), 131);
      Vec dout = random_vec(s.out_size(), 132);
      const AttentionResult gpu = gpu_attention<F>(path, s, qkv, dout, false, this->stream());
      const AttentionResult cpu = cpu_attention(s, qkv, dout);
      this->expect_close(gpu.att, cpu.att, what + "att");
      this->expect_close(gpu.out, cpu.out, what + "out");
      this->expect_close(gpu.dqkv, cpu.dqkv, what + "dqkv");
    }
  }
}

// GPT-2's (C, NH) overloads are the NKV = NH case: the same bits, on every path.
TYPED_TEST(GpuLlamaKernelsTest, Gpt2AttentionSignaturesEqualTheMultiHeadOverloadsBitwise) {
  using F = TypeParam;
  const GqaShape s{2, 11, 4, 4, 16};
  for (const Path path : {Path::fast, Path::reference, Path::dispatched}) {
    Vec qkv = random_vec(s.qkv_size(), 151);
    Vec dout = random_vec(s.out_size(), 152);
    const AttentionResult gqa = gpu_attention<F>(path, s, qkv, dout, false, this->stream());
    const AttentionResult gpt2 = gpu_attention<F>(path, s, qkv, dout, true, this->stream());
    EXPECT_EQ(gpt2.att, gqa.att) << "path " << static_cast<int>(path);
    EXPECT_EQ(gpt2.out, gqa.out) << "path " << static_cast<int>(path);
    EXPECT_EQ(gpt2.dqkv, gqa.dqkv) << "path " << static_cast<int>(path);
  }
}

TEST(GpuFlashAttentionGqa, SupportsSixteenBitHeadSizesUpTo64And96And128And256WithWholeGroups) {
  EXPECT_TRUE(gpu::flash_attention_supports(2, 32, 8, 128)) << "Llama 3 8B";
  EXPECT_TRUE(gpu::flash_attention_supports(2, 16, 8, 128)) << "Qwen3";
  EXPECT_TRUE(gpu::flash_attention_supports(2, 12, 2, 64));
  EXPECT_TRUE(gpu::flash_attention_supports(2, 32, 32, 96)) << "Phi-3-mini";
  EXPECT_TRUE(gpu::flash_attention_supports(2, 8, 4, 256)) << "Gemma 2 2B";
  EXPECT_TRUE(gpu::flash_attention_supports(2, 4, 1, 256)) << "Gemma 3 1B";
  EXPECT_TRUE(gpu::flash_attention_supports(2, 768, 12)) << "GPT-2's (C, NH)";
  EXPECT_FALSE(gpu::flash_attention_supports(4, 32, 8, 128)) << "fp32";
  EXPECT_FALSE(gpu::flash_attention_supports(2, 12, 5, 64)) << "NH not a multiple of NKV";
  EXPECT_FALSE(gpu::flash_attention_supports(2, 8, 2, 80)) << "head size 80";
  EXPECT_FALSE(gpu::flash_attention_supports(2, 8, 2, 192)) << "head size 192";
  EXPECT_FALSE(gpu::flash_attention_supports(2, 8, 2, 512)) << "head size 512";
  EXPECT_FALSE(gpu::flash_attention_supports(2, 8, 2, 0)) << "head size 0";
}

// One flash attention forward and backward (twice: the second must repeat the first's bits) on
// `options`, against the CPU in double. Outputs start as garbage.
template <typename F>
void expect_flash_matches_cpu(const GqaShape& s, const AttentionOptions& options,
                              const std::string& what, cudaStream_t stream) {
  ASSERT_TRUE(gpu::flash_attention_supports(sizeof(F), s.NH, s.NKV, s.HS)) << s.name();
  Vec qkv = random_vec(s.qkv_size(), 181);
  Vec dout = random_vec(s.out_size(), 182);
  const std::size_t rows = static_cast<std::size_t>(s.B) * s.NH * s.T;
  Vec garbage = random_vec(qkv.size(), 183);
  Vec out = random_vec(s.out_size(), 185);
  Vec stats = random_vec(rows, 184);
  DeviceTensor<F> d_qkv(qkv), d_dout(dout), d_out(out), d_dqkv(garbage), d_again(garbage);
  DeviceTensor<float> d_lse(stats), d_delta(stats);
  gpu::flash_attention_forward(d_out.get(), d_lse.get(), d_qkv.get(), s.B, s.T, s.NH, s.NKV, s.HS,
                               stream, options);
  for (F* dqkv : {d_dqkv.get(), d_again.get()}) {
    gpu::flash_attention_backward(dqkv, d_delta.get(), d_dout.get(), d_qkv.get(), d_out.get(),
                                  d_lse.get(), s.B, s.T, s.NH, s.NKV, s.HS, stream, options);
  }
  AT_CUDA_CHECK(cudaStreamSynchronize(stream));
  const AttentionResult cpu = cpu_attention(s, qkv, dout, options);
  const std::string label = "flash attention " + s.name() + " " + what + " ";
  expect_close(d_out.download(), cpu.out, Precision<F>::rtol, Precision<F>::atol, label + "out");
  const Vec gpu_dqkv = d_dqkv.download();
  expect_close(gpu_dqkv, cpu.dqkv, Precision<F>::rtol, Precision<F>::atol, label + "dqkv");
  EXPECT_EQ(d_again.download(), gpu_dqkv) << label << "a second backward";
}

// Flash attention (bf16/fp16) against the CPU in double: two query heads per key/value head at
// HS = 64 (T = 37: ragged tiles), eight per key/value head at HS = 16, and HS = 128 (Qwen3's head
// size, which reads its warps' own rows from global memory). A second backward repeats the first
// bit for bit (no atomics). GPT-2's (C, NH) overloads give the NKV = NH overloads' bits.
// Real GPU only: mma.sync fragment layouts (the emulator follows our reading of the PTX ISA).
TYPED_TEST(GpuLlamaKernelsTest, FlashAttentionWithGqaMatchesCpuForwardAndBackward) {
  using F = TypeParam;
  if constexpr (sizeof(F) != 2) {
    EXPECT_FALSE(gpu::flash_attention_supports(sizeof(F), 4, 2, 64)) << "flash is 16-bit only";
  } else {
    for (const GqaShape& s :
         {GqaShape{1, 37, 4, 2, 64}, GqaShape{1, 37, 8, 1, 16}, GqaShape{1, 20, 4, 2, 128}}) {
      expect_flash_matches_cpu<F>(s, {}, "plain", this->stream());
    }
  }
}

// Gemma's options on the flash kernels: a query scale of its own; a soft cap that bites (scores
// scaled by 1, cap 2); sliding windows, short against T = 150 so that whole key and query tiles
// fall outside every row's window and are skipped (and one of 1: each row sees itself); all at
// once. Then Phi-3-mini's head size 96, and Gemma's 256 (its forward reads Q from global memory
// at each tile, tiles of 32 keys forward and 16 backward, dK and dV in two column parts), plain
// and with Gemma 2's options at T = 70 (a window of 20: skipped tiles there too).
// Real GPU only: mma.sync fragment layouts (the emulator follows our reading of the PTX ISA).
TYPED_TEST(GpuLlamaKernelsTest, FlashAttentionTakesGemmasOptionsAndHeadSizes96And256) {
  using F = TypeParam;
  if constexpr (sizeof(F) == 2) {
    AttentionOptions scale, capped, window, self, gemma;
    scale.scale = 1 / std::sqrt(24.0);
    capped.scale = 1;
    capped.softcap = 2;
    window.window = 20;
    self.window = 1;
    gemma.scale = 0.3;
    gemma.softcap = 1.5;
    gemma.window = 20;
    const GqaShape s{1, 150, 4, 2, 16};
    for (const auto& [options, what] : {std::pair{scale, "query scale"},
                                        {capped, "soft cap"},
                                        {window, "window 20"},
                                        {self, "window 1"},
                                        {gemma, "scale, cap and window"}}) {
      expect_flash_matches_cpu<F>(s, options, what, this->stream());
    }
    expect_flash_matches_cpu<F>(GqaShape{1, 40, 2, 1, 96}, gemma, "head size 96", this->stream());
    expect_flash_matches_cpu<F>(GqaShape{1, 37, 2, 1, 256}, {}, "head size 256", this->stream());
    expect_flash_matches_cpu<F>(GqaShape{1, 70, 2, 1, 256}, gemma, "head size 256, Gemma 2's",
                                this->stream());
  }
}

TYPED_TEST(GpuLlamaKernelsTest, FlashAttentionGpt2SignaturesEqualTheMultiHeadOverloadsBitwise) {
  using F = TypeParam;
  if constexpr (sizeof(F) == 2) {
    const GqaShape s{1, 37, 2, 2, 64};
    const int C = s.NH * s.HS;
    Vec qkv = random_vec(s.qkv_size(), 171);
    Vec dout = random_vec(s.out_size(), 172);
    const std::size_t rows = static_cast<std::size_t>(s.B) * s.NH * s.T;
    Vec out(s.out_size()), dqkv(qkv.size()), stats(rows);
    DeviceTensor<F> d_qkv(qkv), d_dout(dout), d_out_gqa(out), d_out_gpt2(out), d_dqkv_gqa(dqkv),
        d_dqkv_gpt2(dqkv);
    DeviceTensor<float> d_lse_gqa(stats), d_lse_gpt2(stats), d_delta(stats);
    gpu::flash_attention_forward(d_out_gqa.get(), d_lse_gqa.get(), d_qkv.get(), s.B, s.T, s.NH,
                                 s.NH, s.HS, this->stream());
    gpu::flash_attention_forward(d_out_gpt2.get(), d_lse_gpt2.get(), d_qkv.get(), s.B, s.T, C, s.NH,
                                 this->stream());
    gpu::flash_attention_backward(d_dqkv_gqa.get(), d_delta.get(), d_dout.get(), d_qkv.get(),
                                  d_out_gqa.get(), d_lse_gqa.get(), s.B, s.T, s.NH, s.NH, s.HS,
                                  this->stream());
    gpu::flash_attention_backward(d_dqkv_gpt2.get(), d_delta.get(), d_dout.get(), d_qkv.get(),
                                  d_out_gpt2.get(), d_lse_gpt2.get(), s.B, s.T, C, s.NH,
                                  this->stream());
    this->sync();
    EXPECT_EQ(d_out_gpt2.download(), d_out_gqa.download());
    EXPECT_EQ(d_lse_gpt2.download(), d_lse_gqa.download());
    EXPECT_EQ(d_dqkv_gpt2.download(), d_dqkv_gqa.download());
  }
}

// OC = 48 takes the bias gradient's 16-byte loads, OC = 20 (not a whole number of 16-bit packs)
// its scalar loads. The second backward passes no dinp and no dbias (the first layer's input, a
// bias-free Llama projection): dweight still accumulates.
// Real GPU only: cuBLASLt's transposes and bias epilogue (the emulator computes them itself).
TYPED_TEST(GpuLlamaKernelsTest, LinearMatchesCpuWithBiasAndAccumulatedGradients) {
  using F = TypeParam;
  constexpr std::size_t N = 14;
  constexpr int IC = 64;
  const gpu::BlasHandle blas;
  for (const int OC : {48, 20}) {
    SCOPED_TRACE("OC = " + std::to_string(OC));
    const std::size_t weights = static_cast<std::size_t>(OC) * IC;
    Vec inp = random_vec(N * IC, 181);
    Vec weight = random_vec(weights, 182, 0.2);
    Vec bias = random_vec(static_cast<std::size_t>(OC), 183);
    Vec dout = random_vec(N * OC, 184);
    Vec dinp = random_vec(N * IC, 185);  // garbage: must be overwritten
    Vec dweight = random_vec(weights, 186);
    Vec dbias = random_vec(static_cast<std::size_t>(OC), 187);
    Vec dweight_only = random_vec(weights, 188);
    Vec out(N * OC), out_nobias(N * OC);
    DeviceTensor<F> d_inp(inp), d_weight(weight), d_bias(bias), d_dout(dout), d_dinp(dinp),
        d_dweight(dweight), d_dbias(dbias), d_dweight_only(dweight_only), d_out(out),
        d_out_nobias(out_nobias);
    autotrain::gpu::DeviceBuffer scratch(gpu::matmul_backward_scratch_floats(N, OC) *
                                         sizeof(float));

    gpu::linear_forward(blas, d_out.get(), d_inp.get(), d_weight.get(), d_bias.get(), N, IC, OC,
                        this->stream());
    gpu::linear_forward<F>(blas, d_out_nobias.get(), d_inp.get(), d_weight.get(), nullptr, N, IC,
                           OC, this->stream());
    gpu::linear_backward(blas, d_dinp.get(), d_dweight.get(), d_dbias.get(), d_dout.get(),
                         d_inp.get(), d_weight.get(), scratch.as<float>(), N, IC, OC,
                         this->stream());
    gpu::linear_backward<F>(blas, nullptr, d_dweight_only.get(), nullptr, d_dout.get(), d_inp.get(),
                            d_weight.get(), nullptr, N, IC, OC, this->stream());
    this->sync();
    linear_forward(out.data(), inp.data(), weight.data(), bias.data(), N, IC, OC);
    linear_forward<double>(out_nobias.data(), inp.data(), weight.data(), nullptr, N, IC, OC);
    linear_backward(dinp.data(), dweight.data(), dbias.data(), dout.data(), inp.data(),
                    weight.data(), N, IC, OC);
    linear_backward<double>(nullptr, dweight_only.data(), nullptr, dout.data(), inp.data(),
                            weight.data(), N, IC, OC);
    this->expect_close(d_out.download(), out, "linear out (bias epilogue)");
    this->expect_close(d_out_nobias.download(), out_nobias, "linear out (no bias)");
    this->expect_close(d_dinp.download(), dinp, "linear dinp");
    this->expect_close(d_dweight.download(), dweight, "linear dweight");
    this->expect_close(d_dbias.download(), dbias, "linear dbias");
    this->expect_close(d_dweight_only.download(), dweight_only, "linear dweight (no dinp, dbias)");
  }
}

}  // namespace
}  // namespace autotrain::kernels::gpu_llama_kernels_test

#endif  // AUTOTRAIN_HAVE_CUDA
