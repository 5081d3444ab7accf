// cuDNN's fused attention (kernels/gpu/cudnn_attention.hpp) against our flash kernels and the
// reference kernels on the same device, in bf16 and fp16: the output, the row statistics (the
// log-sum-exp, which our flash kernels keep too) and the backward's dqkv, at GPT-2's shape
// (NH = 12, HS = 64, T = 1024, causal), Llama 3's grouped heads (32 over 8, HS = 64 and 128),
// and with Gemma's options (sliding window, soft cap, query scale); a second backward repeats the
// first bit for bit (the default deterministic backward).
// Tolerances are kernels_test.cpp's per element type (|x - reference| <= atol + rtol·|ref|).
//
// The suite is not named Gpu*, so the CUDA emulator's runs (tests/cuda_emu: --gtest_filter=Gpu*)
// leave it out: the emulated build has no cuDNN. It skips without a GPU, and on a GPU in a build
// without cuDNN (which the device check counts as a failure).
#include <gtest/gtest.h>

#ifndef AUTOTRAIN_HAVE_CUDA

TEST(CudnnAttention, SkippedBecauseTheBuildHasNoCuda) {
  GTEST_SKIP() << "this build has no CUDA: cuDNN's attention not tested";
}

#else

#include <cstdio>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <vector>

#include "autotrain/kernels/attention_choice.hpp"
#include "autotrain/kernels/gpu/attention.hpp"
#include "autotrain/kernels/gpu/cudnn_attention.hpp"
#include "autotrain/kernels/gpu/flash_attention.hpp"
#include "gpu/element_types.hpp"
#include "kernel_test_support.hpp"
#include "test_support.hpp"

namespace autotrain::kernels::gpu_cudnn_attention_test {
namespace {

using namespace gpu_test;
using testing::random_vec;

struct Case {
  int B, T, NH, NKV, HS;
  AttentionOptions options;
  std::string name() const {
    return cat("B=", B, " T=", T, " NH=", NH, " NKV=", NKV, " HS=", HS,
               options.window > 0 ? cat(" window=", options.window) : "",
               options.softcap > 0 ? cat(" softcap=", options.softcap) : "",
               options.scale > 0 ? cat(" scale=", options.scale) : "");
  }
  std::size_t qkv_size() const { return std::size_t(B) * T * (NH + 2 * NKV) * HS; }
  std::size_t out_size() const { return std::size_t(B) * T * NH * HS; }
  std::size_t rows() const { return std::size_t(B) * NH * T; }
  std::size_t scores() const { return rows() * T; }
};

template <typename F>
class CudnnAttentionTest : public KernelFixture<F> {
 protected:
  void SetUp() override {
    KernelFixture<F>::SetUp();
    if (this->IsSkipped()) return;
    if (!gpu::cudnn_attention_built()) {
      GTEST_SKIP() << "no cuDNN in this build: " << gpu::cudnn_attention_version();
    }
  }

  static bool shape_is_deterministic(const Case&) {
    return parse_cudnn_deterministic(std::getenv("AUTOTRAIN_CUDNN_DETERMINISTIC"));
  }

  SdpaShape shape(const Case& c) const {
    return sdpa_shape(std::is_same_v<F, __nv_bfloat16>, c.B, c.T, c.NH, c.NKV, c.HS, c.options);
  }

  // cuDNN against the reference kernels (and our flash kernels where `flash`): out, lse, dqkv.
  void compare(const Case& c, bool flash) {
    Vec qkv = random_vec(c.qkv_size(), 301);
    Vec dout = random_vec(c.out_size(), 302);
    Vec out(c.out_size()), dqkv(c.qkv_size()), rows(c.rows());
    Vec scores(c.scores() * (c.options.softcap > 0 ? 2 : 1));
    DeviceTensor<F> d_qkv(qkv), d_dout(dout);
    DeviceTensor<F> cudnn_out(out), cudnn_dqkv(dqkv), ref_out(out), ref_dqkv(dqkv), ref_att(scores),
        ref_scratch(scores);
    DeviceTensor<float> cudnn_lse(rows), cudnn_delta(rows);
    gpu::cudnn_attention_forward(cudnn_out.get(), cudnn_lse.get(), d_qkv.get(), c.B, c.T, c.NH,
                                 c.NKV, c.HS, this->stream(), c.options);
    gpu::cudnn_attention_backward(cudnn_dqkv.get(), cudnn_delta.get(), d_dout.get(), d_qkv.get(),
                                  cudnn_out.get(), cudnn_lse.get(), c.B, c.T, c.NH, c.NKV, c.HS,
                                  this->stream(), c.options);
    gpu::attention_forward_reference(ref_out.get(), ref_att.get(), d_qkv.get(), c.B, c.T, c.NH,
                                     c.NKV, c.HS, this->stream(), c.options);
    gpu::attention_backward_reference(ref_dqkv.get(), ref_scratch.get(), d_dout.get(), d_qkv.get(),
                                      ref_att.get(), c.B, c.T, c.NH, c.NKV, c.HS, this->stream(),
                                      c.options);
    DeviceTensor<F> cudnn_again(dqkv);
    gpu::cudnn_attention_backward(cudnn_again.get(), cudnn_delta.get(), d_dout.get(), d_qkv.get(),
                                  cudnn_out.get(), cudnn_lse.get(), c.B, c.T, c.NH, c.NKV, c.HS,
                                  this->stream(), c.options);
    this->sync();
    const std::string what = "cuDNN " + c.name() + " against the reference kernels: ";
    const Vec got_out = cudnn_out.download(), got_dqkv = cudnn_dqkv.download();
    // The default backward is deterministic (AUTOTRAIN_CUDNN_DETERMINISTIC unset or 1).
    if (this->shape_is_deterministic(c)) {
      EXPECT_EQ(cudnn_again.download(), got_dqkv) << "cuDNN " << c.name() << ": a second backward";
    }
    this->expect_close(got_out, ref_out.download(), what + "out");
    this->expect_close(got_dqkv, ref_dqkv.download(), what + "dqkv");
    if (!flash) return;
    DeviceTensor<F> flash_out(out), flash_dqkv(dqkv);
    DeviceTensor<float> flash_lse(rows), flash_delta(rows);
    gpu::flash_attention_forward(flash_out.get(), flash_lse.get(), d_qkv.get(), c.B, c.T, c.NH,
                                 c.NKV, c.HS, this->stream(), c.options);
    gpu::flash_attention_backward(flash_dqkv.get(), flash_delta.get(), d_dout.get(), d_qkv.get(),
                                  flash_out.get(), flash_lse.get(), c.B, c.T, c.NH, c.NKV, c.HS,
                                  this->stream(), c.options);
    this->sync();
    const std::string against = "cuDNN " + c.name() + " against our flash kernels: ";
    this->expect_close(got_out, flash_out.download(), against + "out");
    // Both statistics are log Σ exp(scores) in natural log, in fp32 from fp32 scores.
    expect_close(cudnn_lse.download(), flash_lse.download(), 1e-3, 1e-3, against + "lse");
    this->expect_close(got_dqkv, flash_dqkv.download(), against + "dqkv");
  }
};

// cuDNN's fused attention takes the 16-bit types only (the models never ask it in fp32).
using HalfTypes = ::testing::Types<__nv_bfloat16, __half>;
TYPED_TEST_SUITE(CudnnAttentionTest, HalfTypes, autotrain::testing::GpuTypeNames);

// GPT-2 124M's heads (B = 2, T = 1024), Llama 3.2 1B's (32 query heads over 8 key/value heads of
// 64) and Llama 3 8B's (of 128), and a ragged T: cuDNN's plans must build for each, and its
// output, statistics and gradients match our flash kernels' and the reference's.
// Real GPU only: cuDNN's fused attention (the emulated build has no cuDNN).
TYPED_TEST(CudnnAttentionTest, MatchesFlashAndReferenceAtGpt2AndLlamaShapes) {
  for (const Case& c : {Case{2, 1024, 12, 12, 64, {}}, Case{1, 512, 32, 8, 64, {}},
                        Case{1, 256, 32, 8, 128, {}}, Case{2, 37, 4, 2, 64, {}}}) {
    const std::string refusal = gpu::cudnn_attention_prepare(this->shape(c), this->stream());
    ASSERT_EQ(refusal, "") << c.name();
    std::printf("cuDNN %s: %s\n", this->shape(c).describe().c_str(),
                gpu::cudnn_attention_engines(this->shape(c)).c_str());
    this->compare(c, true);
  }
}

// Gemma's options: a query scale of its own, a sliding window shorter than T, the logit soft cap,
// and all three at once, against the reference kernels and our flash kernels; and Gemma's head
// size 256 with Gemma 2's options.
// Real GPU only: cuDNN's fused attention (the emulated build has no cuDNN).
TYPED_TEST(CudnnAttentionTest, MatchesFlashAndReferenceWithGemmasOptions) {
  AttentionOptions scale, window, softcap, all;
  scale.scale = 1 / 16.0;
  window.window = 64;
  softcap.softcap = 50;
  all.scale = 1 / 16.0;
  all.window = 64;
  all.softcap = 20;
  for (const Case& c : {Case{1, 256, 8, 4, 128, scale}, Case{1, 256, 8, 4, 128, window},
                        Case{1, 256, 8, 4, 128, softcap}, Case{1, 256, 8, 4, 128, all},
                        Case{1, 256, 8, 4, 256, all}}) {
    // cuda.cudnn_plans found cuDNN's engines take each of these graphs (for an H100's
    // description, without a GPU); here they must also build and compute.
    const std::string refusal = gpu::cudnn_attention_prepare(this->shape(c), this->stream());
    ASSERT_EQ(refusal, "") << c.name();
    this->compare(c, true);
  }
}

}  // namespace
}  // namespace autotrain::kernels::gpu_cudnn_attention_test
#endif  // AUTOTRAIN_HAVE_CUDA
