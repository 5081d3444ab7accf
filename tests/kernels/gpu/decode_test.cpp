// The decoding step's kernels (kernels/gpu/decode.hpp), which read the position from device
// memory, against the CPU kernels in double on the same inputs rounded to the element type, with
// kernel_test_support.hpp's tolerances: decode_attention against attention_forward_last over the
// rows 0..t at positions on both sides of the chunk borders (capacity 150: chunks of 64, 64, 22),
// with grouped-query heads, plain and with a scale, a soft cap and a sliding window, for one row
// and for steps of several rows (each row over the keys up to its own position); the rows past
// the last hold garbage that must not count. decode_embed, decode_store_rows and rope_forward_at,
// one row and several, against what the position-taking kernels give. Skips without CUDA or a
// device.
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

namespace autotrain::kernels::gpu_decode_test {
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
  constexpr int kMostRows = 30;
  autotrain::gpu::DeviceBuffer scratch(gpu::decode_attention_scratch_floats(P, kMostRows, NH, HS) *
                                       sizeof(float));
  const auto Q = static_cast<std::size_t>(NH) * HS;
  // (t, rows): one row on both sides of the borders, then steps of several rows across them.
  const std::vector<std::pair<int, int> > steps = {{0, 1},  {1, 1},   {63, 1},   {64, 1},
                                                   {65, 1}, {100, 1}, {133, 1},  {149, 1},
                                                   {0, 5},  {60, 9},  {120, 30}, {148, 2}};
  for (const bool plain : {true, false}) {
    const AttentionOptions options = plain ? AttentionOptions{} : windowed;
    for (const auto& [t, n] : steps) {
      const std::string what = std::string(plain ? "plain" : "scaled, capped, windowed") +
                               " at t = " + std::to_string(t) + ", " + std::to_string(n) + " rows";
      Vec out = random_vec(static_cast<std::size_t>(n) * Q, 202);
      DeviceTensor<F> d_out(out);
      gpu::decode_attention(d_out.get(), scratch.as<float>(), d_rows.get(), this->position(t), n, P,
                            NH, NKV, HS, options, this->stream());
      this->sync();
      Vec expected(out.size());
      for (int i = 0; i < n; ++i) {
        Vec probabilities(static_cast<std::size_t>(t + i) + 1);
        attention_forward_last(expected.data() + static_cast<std::size_t>(i) * Q,
                               probabilities.data(), rows.data(), t + i + 1, NH, NKV, HS, options);
      }
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
  gpu::decode_embed(d_out.get(), d_tokens.as<std::int32_t>(), this->position(t), 1, d_wte.get(),
                    d_wpe.get(), C, 1.0f, this->stream());
  this->sync();
  gpu::decode_embed(d_plain.get(), d_tokens.as<std::int32_t>(), this->position(t), 1, d_wte.get(),
                    static_cast<const F*>(nullptr), C, 2.0f, this->stream());
  this->sync();
  Vec expected(out.size());
  encoder_forward(expected.data(), tokens.data() + t, wte.data(), wpe.data() + t * C, 1, 1, C);
  this->expect_close(d_out.download(), expected, "decode_embed with wpe");
  Vec scaled(wte.begin() + tokens[t] * C, wte.begin() + (tokens[t] + 1) * C);
  for (double& x : scaled) x *= 2.0;
  this->expect_close(d_plain.download(), scaled, "decode_embed without wpe, scale 2");
  // Rows 3, 4 and 5 in one step.
  Vec three(static_cast<std::size_t>(3) * C), expected_three(three.size());
  DeviceTensor<F> d_three(three);
  gpu::decode_embed(d_three.get(), d_tokens.as<std::int32_t>(), this->position(3), 3, d_wte.get(),
                    d_wpe.get(), C, 1.0f, this->stream());
  this->sync();
  encoder_forward(expected_three.data(), tokens.data() + 3, wte.data(), wpe.data() + 3 * C, 1, 3,
                  C);
  this->expect_close(d_three.download(), expected_three, "decode_embed of 3 rows at 3");

  // Rows t (and t + 1) of a cache [P, C] become the new rows; the others stay as they were.
  for (const int n : {1, 2}) {
    Vec cache = random_vec(static_cast<std::size_t>(P) * C, 213);
    Vec new_rows = random_vec(static_cast<std::size_t>(n) * C, 214);
    DeviceTensor<F> d_cache(cache), d_new(new_rows);
    gpu::decode_store_rows(d_cache.get(), d_new.get(), n, C, this->position(t), this->stream());
    this->sync();
    std::copy(new_rows.begin(), new_rows.end(), cache.begin() + t * C);
    EXPECT_EQ(d_cache.download(), cache) << n << " rows";
  }

  // rope_forward_at(position t) gives the bits of rope_forward(pos0 = t) on the packed path
  // (HS = 16) and the scalar one (HS = 10), for one row and for two rows in a wider stride (the
  // q heads of a qkv row).
  for (const int HS : {16, 10}) {
    constexpr int heads = 3;
    const int half = HS / 2;
    std::vector<double> inv_freq(static_cast<std::size_t>(half));
    for (int i = 0; i < half; ++i) inv_freq[i] = std::pow(10000.0, -2.0 * i / HS);
    std::vector<float> cos32(static_cast<std::size_t>(P) * half), sin32(cos32.size());
    rope_tables(cos32.data(), sin32.data(), inv_freq.data(), P, half);
    Vec cos(cos32.begin(), cos32.end()), sin(sin32.begin(), sin32.end());
    for (const int n : {1, 2}) {
      const std::size_t stride = static_cast<std::size_t>(n == 1 ? heads : heads + 2) * HS;
      Vec x = random_vec(static_cast<std::size_t>(n) * stride, 215);
      Vec y = x;
      DeviceTensor<F> d_x(x), d_y(y);
      DeviceTensor<float> d_cos(cos), d_sin(sin);
      gpu::rope_forward_at(d_x.get(), d_cos.get(), d_sin.get(), n, heads, HS, HS, stride,
                           this->position(t), this->stream());
      this->sync();
      gpu::rope_forward(d_y.get(), d_cos.get(), d_sin.get(), 1, n, heads, HS, HS, stride, t,
                        this->stream());
      this->sync();
      EXPECT_EQ(d_x.download(), d_y.download()) << "HS = " << HS << ", " << n << " rows";
    }
  }
}

}  // namespace
}  // namespace autotrain::kernels::gpu_decode_test

#endif  // AUTOTRAIN_HAVE_CUDA
