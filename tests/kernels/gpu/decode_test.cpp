// The decoding step's kernels (kernels/gpu/decode.hpp), which read the position from device
// memory, against the CPU kernels in double on the same inputs rounded to the element type, with
// kernel_test_support.hpp's tolerances: decode_attention against attention_forward_last over the
// rows 0..t at positions on both sides of the chunk borders (capacity 150: chunks of 64, 64, 22),
// with grouped-query heads, plain and with a scale, a soft cap and a sliding window; the rows
// past t hold garbage that must not count. decode_embed, decode_store_row and rope_forward_at
// against what the position-taking kernels give. Skips without CUDA or a device.
#include <gtest/gtest.h>

#ifndef AUTOTRAIN_HAVE_CUDA

TEST(GpuDecodeKernels, SkippedBecauseTheBuildHasNoCuda) {
  GTEST_SKIP() << "this build has no CUDA (AUTOTRAIN_CUDA=off or no toolkit): CUDA kernels not "
                  "tested";
}

#else

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "autotrain/core/gpu/check.hpp"
#include "autotrain/core/gpu/device.hpp"
#include "autotrain/kernels/attention.hpp"
#include "autotrain/kernels/encoder.hpp"
#include "autotrain/kernels/gpu/decode.hpp"
#include "autotrain/kernels/gpu/rope.hpp"
#include "autotrain/kernels/rope.hpp"
#include "gpu/element_types.hpp"
#include "kernel_test_support.hpp"
#include "test_support.hpp"

namespace autotrain::kernels {
namespace {

using testing::random_vec;

using namespace gpu_test;

template <typename F>
class GpuDecodeKernelsTest : public KernelFixture<F> {
 protected:
  // The device position t.
  const std::int32_t* position(std::int32_t t) {
    position_.copy_from_host(&t, sizeof t);
    return position_.as<std::int32_t>();
  }

 private:
  autotrain::gpu::DeviceBuffer position_{sizeof(std::int32_t)};
};

TYPED_TEST_SUITE(GpuDecodeKernelsTest, autotrain::testing::GpuElementTypes,
                 autotrain::testing::GpuTypeNames);

TYPED_TEST(GpuDecodeKernelsTest, AttentionMatchesTheCpusLastRowAcrossChunkBorders) {
  using F = TypeParam;
  constexpr int P = 150, NH = 4, NKV = 2, HS = 16;
  const auto row = static_cast<std::size_t>(NH + 2 * NKV) * HS;
  Vec rows = random_vec(static_cast<std::size_t>(P) * row, 201, 2.0);
  DeviceTensor<F> d_rows(rows);
  AttentionOptions windowed;
  windowed.scale = 0.3;
  windowed.softcap = 5.0;
  windowed.window = 70;
  autotrain::gpu::DeviceBuffer scratch(gpu::decode_attention_scratch_floats(P, NH, HS) *
                                       sizeof(float));
  for (const bool plain : {true, false}) {
    const AttentionOptions options = plain ? AttentionOptions{} : windowed;
    for (const int t : {0, 1, 63, 64, 65, 100, 133, 149}) {
      const std::string what = std::string(plain ? "plain" : "scaled, capped, windowed") +
                               " at t = " + std::to_string(t);
      Vec out = random_vec(static_cast<std::size_t>(NH) * HS, 202);
      DeviceTensor<F> d_out(out);
      gpu::decode_attention(d_out.get(), scratch.as<float>(), d_rows.get(), this->position(t), P,
                            NH, NKV, HS, options, this->stream());
      this->sync();
      Vec expected(out.size());
      Vec probabilities(static_cast<std::size_t>(t) + 1);
      attention_forward_last(expected.data(), probabilities.data(), rows.data(), t + 1, NH, NKV, HS,
                             options);
      this->expect_close(d_out.download(), expected, "decode attention, " + what);
    }
  }
}

TYPED_TEST(GpuDecodeKernelsTest, EmbedStoreAndRopeUseTheDevicePosition) {
  using F = TypeParam;
  constexpr int P = 6, C = 24, V = 10, t = 4;
  const std::vector<std::int32_t> tokens{3, 1, 4, 1, 5, 9};
  const autotrain::gpu::DeviceBuffer d_tokens = upload_ids(tokens);
  Vec wte = random_vec(static_cast<std::size_t>(V) * C, 211);
  Vec wpe = random_vec(static_cast<std::size_t>(P) * C, 212);
  Vec out(static_cast<std::size_t>(C)), plain(out.size());
  DeviceTensor<F> d_wte(wte), d_wpe(wpe), d_out(out), d_plain(plain);
  gpu::decode_embed(d_out.get(), d_tokens.as<std::int32_t>(), this->position(t), d_wte.get(),
                    d_wpe.get(), C, 1.0f, this->stream());
  this->sync();
  gpu::decode_embed(d_plain.get(), d_tokens.as<std::int32_t>(), this->position(t), d_wte.get(),
                    static_cast<const F*>(nullptr), C, 2.0f, this->stream());
  this->sync();
  Vec expected(out.size());
  encoder_forward(expected.data(), tokens.data() + t, wte.data(), wpe.data() + t * C, 1, 1, C);
  this->expect_close(d_out.download(), expected, "decode_embed with wpe");
  Vec scaled(wte.begin() + tokens[t] * C, wte.begin() + (tokens[t] + 1) * C);
  for (double& x : scaled) x *= 2.0;
  this->expect_close(d_plain.download(), scaled, "decode_embed without wpe, scale 2");

  // Row t of a cache [P, C] becomes the row; the others stay as they were.
  Vec cache = random_vec(static_cast<std::size_t>(P) * C, 213);
  Vec new_row = random_vec(static_cast<std::size_t>(C), 214);
  DeviceTensor<F> d_cache(cache), d_row(new_row);
  gpu::decode_store_row(d_cache.get(), d_row.get(), C, this->position(t), this->stream());
  this->sync();
  std::copy(new_row.begin(), new_row.end(), cache.begin() + t * C);
  EXPECT_EQ(d_cache.download(), cache);

  // rope_forward_at(position t) gives the bits of rope_forward(pos0 = t) on the packed path
  // (HS = 16) and the scalar one (HS = 10).
  for (const int HS : {16, 10}) {
    constexpr int heads = 3;
    const int half = HS / 2;
    std::vector<double> inv_freq(static_cast<std::size_t>(half));
    for (int i = 0; i < half; ++i) inv_freq[i] = std::pow(10000.0, -2.0 * i / HS);
    std::vector<float> cos32(static_cast<std::size_t>(P) * half), sin32(cos32.size());
    rope_tables(cos32.data(), sin32.data(), inv_freq.data(), P, half);
    Vec cos(cos32.begin(), cos32.end()), sin(sin32.begin(), sin32.end());
    Vec x = random_vec(static_cast<std::size_t>(heads) * HS, 215);
    Vec y = x;
    DeviceTensor<F> d_x(x), d_y(y);
    DeviceTensor<float> d_cos(cos), d_sin(sin);
    gpu::rope_forward_at(d_x.get(), d_cos.get(), d_sin.get(), heads, HS, HS, this->position(t),
                         this->stream());
    this->sync();
    gpu::rope_forward(d_y.get(), d_cos.get(), d_sin.get(), 1, 1, heads, HS, HS,
                      static_cast<std::size_t>(heads) * HS, t, this->stream());
    this->sync();
    EXPECT_EQ(d_x.download(), d_y.download()) << "HS = " << HS;
  }
}

}  // namespace
}  // namespace autotrain::kernels

#endif  // AUTOTRAIN_HAVE_CUDA
