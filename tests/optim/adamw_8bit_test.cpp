// The 8-bit AdamW (optim/adamw_8bit.hpp) and its blockwise storage (optim/blockwise_8bit.hpp): the
// dynamic maps against their definition, the quantize/dequantize round trip, and a few steps of
// the optimizer against a PyTorch reference written from bitsandbytes' definition
// (tests/optim/torch_adamw_8bit.py), bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "autotrain/optim/blockwise_8bit.hpp"
#include "autotrain/optim/optimizer.hpp"
#include "test_support.hpp"

namespace autotrain::adamw_8bit_test {
namespace {

std::vector<float> random_floats(std::size_t n, float scale, unsigned seed) {
  std::mt19937 generator(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> values(n);
  for (auto& value : values) value = normal(generator);
  return values;
}

TEST(DynamicMap, SignedHas256SortedEntriesSymmetricAroundZeroPlusOne) {
  const DynamicMap& map = signed_dynamic_map();
  EXPECT_TRUE(std::is_sorted(map.begin(), map.end()));
  EXPECT_EQ(std::adjacent_find(map.begin(), map.end()), map.end()) << "an entry repeats";
  EXPECT_EQ(map[127], 0.0f);
  EXPECT_EQ(map[255], 1.0f);
  // 127 negatives, 0, 127 positives mirror each other; 1.0 has no negative twin.
  for (std::size_t k = 0; k < 255; ++k) EXPECT_EQ(map[k], -map[254 - k]) << k;
  EXPECT_NEAR(map[0], -(1.0 - 0.9 / 128), 1e-7);  // the largest midpoint of exponent 0
  EXPECT_NEAR(map[128], 1e-6 * 0.55, 1e-13);      // the smallest positive: 10^-6 * mean(0.1, 1)
}

TEST(DynamicMap, UnsignedHas256SortedNonNegativeEntriesFromZeroToOne) {
  const DynamicMap& map = unsigned_dynamic_map();
  EXPECT_TRUE(std::is_sorted(map.begin(), map.end()));
  EXPECT_EQ(std::adjacent_find(map.begin(), map.end()), map.end()) << "an entry repeats";
  EXPECT_EQ(map[0], 0.0f);
  EXPECT_EQ(map[255], 1.0f);
  EXPECT_NEAR(map[1], 1e-6 * (0.1 + 0.9 / 4), 1e-13);  // 10^-6 * the first of 2 midpoints
  EXPECT_NEAR(map[254], 1.0 - 0.9 / 256, 1e-7);
  // Exponent 10^-6 has 2 entries, 10^-5 4, ... 10^0 128: 254 positives.
  EXPECT_EQ(std::count_if(map.begin(), map.end(), [](float x) { return x > 0 && x < 1; }), 254);
}

TEST(DynamicMap, QuantizeNearestPicksTheNearestEntryAndTheLowerOnATie) {
  const DynamicMap& map = signed_dynamic_map();
  for (std::size_t k = 0; k < 256; ++k) EXPECT_EQ(quantize_nearest(map, map[k]), k);
  EXPECT_EQ(quantize_nearest(map, -1.0f), 0);  // below the map: its lowest entry
  EXPECT_EQ(quantize_nearest(map, 2.0f), 255);
  for (float x : random_floats(10000, 0.3f, 3)) {
    x = std::clamp(x, -1.0f, 1.0f);
    const std::uint8_t code = quantize_nearest(map, x);
    for (std::size_t k = 0; k < 256; ++k) {
      ASSERT_LE(std::fabs(x - map[code]), std::fabs(x - map[k])) << x << " entry " << k;
    }
  }
  // Halfway between two entries (exactly, where the float midpoint is representable): the lower.
  const float middle = (map[200] + map[201]) / 2;
  if (middle - map[200] == map[201] - middle) {
    EXPECT_EQ(quantize_nearest(map, middle), 200);
  }
}

// quantize_block's vector path (AVX-512 builds) gives quantize_nearest's codes: random values of
// every magnitude, exact entries, midpoints, values past either end, zeros and a NaN.
TEST(Blockwise8bit, EveryPathGivesTheScalarSearchsCodes) {
  for (const bool is_signed : {true, false}) {
    const DynamicMap& map = is_signed ? signed_dynamic_map() : unsigned_dynamic_map();
    std::vector<float> values;
    for (float x : random_floats(3000, 1.0f, 9)) {
      values.push_back(std::ldexp(x, -static_cast<int>(values.size() % 30)));
    }
    for (std::size_t k = 0; k < 256; ++k) {
      values.push_back(map[k]);
      if (k < 255) values.push_back((map[k] + map[k + 1]) / 2);
    }
    values.insert(values.end(), {-1.0f, 1.0f, 0.0f, -0.0f, std::nanf(""), 0.5f});
    for (auto& value : values) value = is_signed ? value : std::fabs(value);
    values.resize(2 * kQuantBlock);  // zeros after
    std::vector<std::uint8_t> codes(values.size());
    std::vector<float> absmax(2);
    // One block whose absmax is 1 (the map's own values), one of the rest.
    std::copy(values.begin() + 3000, values.begin() + 3000 + 517, values.begin() + kQuantBlock);
    values[kQuantBlock + 600] = 1.0f;
    quantize_blockwise(values.data(), values.size(), map, codes.data(), absmax.data());
    for (std::size_t i = 0; i < values.size(); ++i) {
      const float divisor = absmax[i / kQuantBlock] > 0 ? absmax[i / kQuantBlock] : 1.0f;
      ASSERT_EQ(codes[i], quantize_nearest(map, values[i] / divisor))
          << (is_signed ? "signed " : "unsigned ") << i << " " << values[i];
    }
  }
}

// Each value comes back within half the largest gap of the map, times its block's absmax; the
// block's largest |value| exactly where it is positive (map entry 1.0).
TEST(Blockwise8bit, RoundTripErrorIsWithinHalfTheMapsLargestGapTimesTheBlocksAbsmax) {
  const std::size_t n = 3 * kQuantBlock + 77;
  for (const bool is_signed : {true, false}) {
    const DynamicMap& map = is_signed ? signed_dynamic_map() : unsigned_dynamic_map();
    float gap = 0;
    for (std::size_t k = 0; k + 1 < 256; ++k) gap = std::max(gap, map[k + 1] - map[k]);
    std::vector<float> values = random_floats(n, 1e-3f, is_signed ? 5 : 6);
    if (!is_signed) {
      for (auto& value : values) value = value * value;  // like v: squares
    }
    std::fill_n(values.begin() + kQuantBlock, kQuantBlock, 0.0f);  // block 1: zeros
    std::vector<std::uint8_t> codes(n);
    std::vector<float> absmax(quant_blocks(n)), back(n);
    quantize_blockwise(values.data(), n, map, codes.data(), absmax.data());
    dequantize_blockwise(codes.data(), absmax.data(), n, map, back.data());
    EXPECT_EQ(absmax[1], 0.0f);
    for (std::size_t i = 0; i < n; ++i) {
      const float block_max = absmax[i / kQuantBlock];
      ASSERT_LE(std::fabs(back[i] - values[i]), block_max * (gap / 2) * 1.0001f)
          << (is_signed ? "signed " : "unsigned ") << i;
      if (std::fabs(values[i]) == block_max && values[i] > 0) {
        ASSERT_EQ(back[i], values[i]) << i;
      }
      if (values[i] == 0.0f) {
        ASSERT_EQ(back[i], 0.0f) << i;
      }
    }
    // Quantized again, dequantized values give the same codes and absmax: requantize_blockwise
    // in every block (a checkpoint's moments load back as they were saved); quantize_blockwise
    // only where the block's largest magnitude is positive (the signed map has no -1).
    std::vector<std::uint8_t> again(n), plain(n);
    std::vector<float> absmax_again(absmax.size()), absmax_plain(absmax.size());
    requantize_blockwise(back.data(), n, map, again.data(), absmax_again.data());
    quantize_blockwise(back.data(), n, map, plain.data(), absmax_plain.data());
    std::size_t negative_largest = 0;
    for (std::size_t b = 0; b < absmax.size(); ++b) {
      const std::size_t begin = b * kQuantBlock, end = std::min(n, begin + kQuantBlock);
      EXPECT_EQ(absmax_again[b], absmax[b]) << b;
      for (std::size_t i = begin; i < end; ++i) ASSERT_EQ(again[i], codes[i]) << i;
      const float largest = *std::max_element(back.begin() + begin, back.begin() + end);
      if (largest != absmax[b]) {
        ++negative_largest;
        continue;
      }
      EXPECT_EQ(absmax_plain[b], absmax[b]) << b;
      for (std::size_t i = begin; i < end; ++i) ASSERT_EQ(plain[i], codes[i]) << i;
    }
    if (is_signed) {
      EXPECT_GT(negative_largest, 0u) << "no block tests the negative case";
    }
  }
}

// ---- The optimizer --------------------------------------------------------------------------

OptimizerSettings eight_bit_settings() {
  OptimizerSettings settings;
  settings.kind = OptimizerKind::adamw_8bit;
  settings.weight_decay = 0.1f;
  return settings;
}

// Three segments: one decays, a bias that does not (block 1 spans both), a gap the rank does not
// own, one more that decays; state 3000 + 1500 + 400 = 4900 elements, blocks 2048, 2048, 804.
const std::vector<ParamSegment> kSegments = {
    {0, 3000, true}, {3000, 4500, false}, {4600, 5000, true}};
constexpr std::size_t kFlat = 5000;
constexpr int kSteps = 5;

void write_floats(const std::filesystem::path& path, const std::vector<float>& values) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(values.data()),
            static_cast<std::streamsize>(values.size() * sizeof(float)));
}

std::vector<float> read_floats(const std::filesystem::path& path, std::size_t n) {
  std::vector<float> values(n);
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(values.data()), static_cast<std::streamsize>(n * sizeof(float)));
  EXPECT_TRUE(in.good()) << path;
  return values;
}

// Same bits (so +0 and -0 differ, and a NaN would show).
void expect_same_bits(const std::vector<float>& ours, const std::vector<float>& torch,
                      const std::string& what) {
  ASSERT_EQ(ours.size(), torch.size()) << what;
  std::size_t differ = 0, first = 0;
  for (std::size_t i = 0; i < ours.size(); ++i) {
    if (std::bit_cast<std::uint32_t>(ours[i]) != std::bit_cast<std::uint32_t>(torch[i])) {
      if (differ++ == 0) first = i;
    }
  }
  EXPECT_EQ(differ, 0u) << what << ": " << differ << " elements differ, the first [" << first
                        << "] " << ours[first] << " against " << torch[first];
}

TEST(AdamW8bit, FiveStepsMatchAPyTorchReferenceBitForBit) {
  const std::string python = std::getenv("PYTHON") ? std::getenv("PYTHON") : "/usr/bin/python3";
  if (!std::filesystem::exists(python)) GTEST_SKIP() << python << " not found (set PYTHON)";
  const OptimizerSettings settings = eight_bit_settings();
  const float lr = 1e-2f, grad_scale = 0.5f;
  Optimizer optimizer(settings, kSegments);
  std::vector<float> p = random_floats(kFlat, 0.5f, 1);
  const std::vector<float> p0 = p;
  std::vector<float> all_grads;
  for (int step = 0; step < kSteps; ++step) {
    // Gradients of several magnitudes, so that the blocks' absmax and the map's exponents vary.
    std::vector<float> g = random_floats(kFlat, step == 2 ? 1e-4f : 1.0f, 10 + step);
    for (std::size_t i = 0; i < kFlat; i += 97) g[i] *= 50.0f;
    optimizer.step(p, g, 0, lr, grad_scale);
    all_grads.insert(all_grads.end(), g.begin(), g.end());
  }
  optimizer.stage_moments();
  const std::vector<float> m(optimizer.first_moment().begin(), optimizer.first_moment().end());
  const std::vector<float> v(optimizer.second_moment().begin(), optimizer.second_moment().end());
  ASSERT_EQ(m.size(), 4900u);

  const testing::TempDir dir;
  testing::write_file(
      dir / "case.json",
      "{\"flat\": 5000, \"steps\": 5, \"segments\": [[0, 3000, 1], [3000, 4500, 0], [4600, 5000, "
      "1]], \"lr\": 0.01, \"beta1\": 0.9, \"beta2\": 0.999, \"eps\": 1e-8, \"weight_decay\": 0.1, "
      "\"grad_scale\": 0.5}");
  write_floats(dir / "p", p0);
  write_floats(dir / "g", all_grads);
  const std::string command = python + " " +
                              testing::source_path("tests/optim/torch_adamw_8bit.py").string() +
                              " " + dir.path().string();
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  const DynamicMap& signed_map = signed_dynamic_map();
  const DynamicMap& unsigned_map = unsigned_dynamic_map();
  expect_same_bits({signed_map.begin(), signed_map.end()}, read_floats(dir / "map_signed", 256),
                   "the signed map");
  expect_same_bits({unsigned_map.begin(), unsigned_map.end()},
                   read_floats(dir / "map_unsigned", 256), "the unsigned map");
  expect_same_bits(p, read_floats(dir / "p", kFlat), "p");
  expect_same_bits(m, read_floats(dir / "m", m.size()), "m");
  expect_same_bits(v, read_floats(dir / "v", v.size()), "v");
  EXPECT_EQ(p[4550], p0[4550]) << "an element outside the segments moved";
}

// The 8-bit moments follow the 32-bit ones closely: after five steps the weights are apart by
// about 1% of how far the steps moved them (0.98% here; the bound leaves a factor 3).
TEST(AdamW8bit, StaysCloseToThe32BitAdamW) {
  OptimizerSettings settings = eight_bit_settings();
  Optimizer eight(settings, kSegments);
  settings.kind = OptimizerKind::adamw;
  Optimizer full(settings, kSegments);
  std::vector<float> p8 = random_floats(kFlat, 0.5f, 1), p32 = p8;
  const std::vector<float> p0 = p8;
  for (int step = 0; step < kSteps; ++step) {
    const std::vector<float> g = random_floats(kFlat, 1.0f, 20 + step);
    eight.step(p8, g, 0, 1e-2f, 1.0f);
    full.step(p32, g, 0, 1e-2f, 1.0f);
  }
  double moved = 0, apart = 0;
  for (std::size_t i = 0; i < kFlat; ++i) {
    moved += std::fabs(p32[i] - p0[i]);
    apart += std::fabs(p8[i] - p32[i]);
  }
  EXPECT_LT(apart, 0.03 * moved) << apart / moved;
}

TEST(AdamW8bit, StagedMomentsLoadBackAndAStepFreesThem) {
  Optimizer optimizer(eight_bit_settings(), kSegments);
  EXPECT_TRUE(optimizer.first_moment().empty());
  EXPECT_EQ(optimizer.state_bytes(), 2 * (4900 + 3 * sizeof(float)));
  EXPECT_EQ(optimizer.state_elements(), 2 * 4900u);
  // Never stepped: the staged moments are zeros.
  optimizer.stage_moments();
  ASSERT_EQ(optimizer.first_moment().size(), 4900u);
  EXPECT_EQ(*std::max_element(optimizer.first_moment().begin(), optimizer.first_moment().end()),
            0.0f);
  // A checkpoint writes fp32 moments into the staged copies; loading them requantizes.
  const std::vector<float> m = random_floats(4900, 1e-2f, 7);
  std::vector<float> v = random_floats(4900, 1e-2f, 8);
  for (auto& value : v) value *= value;
  std::copy(m.begin(), m.end(), optimizer.first_moment().begin());
  std::copy(v.begin(), v.end(), optimizer.second_moment().begin());
  optimizer.load_staged_moments();
  EXPECT_TRUE(optimizer.first_moment().empty());
  optimizer.stage_moments();
  for (std::size_t i = 0; i < m.size(); ++i) {
    // Half the maps' largest gaps (0.0071, 0.0036) times an absmax below 6 sigma.
    ASSERT_NEAR(optimizer.first_moment()[i], m[i], 0.0071 * 0.06) << i;
    ASSERT_NEAR(optimizer.second_moment()[i], v[i], 0.0036 * 0.0036) << i;
  }
  std::vector<float> p(kFlat, 1.0f), g(kFlat, 0.1f);
  optimizer.step(p, g, 0, 1e-3f, 1.0f);
  EXPECT_TRUE(optimizer.first_moment().empty());
}

TEST(Optimizer, AcceptsBitsandbytesNamesAndSaysWhichArePaged) {
  EXPECT_EQ(parse_optimizer("adamw_8bit", "optimizer"), OptimizerKind::adamw_8bit);
  EXPECT_EQ(parse_optimizer("adamw_bnb_8bit", "optimizer"), OptimizerKind::adamw_8bit);
  EXPECT_EQ(parse_optimizer("paged_adamw_8bit", "optimizer"), OptimizerKind::adamw_8bit);
  EXPECT_EQ(parse_optimizer("paged_adamw_32bit", "optimizer"), OptimizerKind::adamw);
  EXPECT_TRUE(paged_optimizer("paged_adamw_8bit"));
  EXPECT_FALSE(paged_optimizer("adamw_8bit"));
  EXPECT_TRUE(same_optimizer_state(OptimizerKind::adamw, OptimizerKind::adamw_8bit));
  EXPECT_FALSE(same_optimizer_state(OptimizerKind::sgd, OptimizerKind::adamw_8bit));
  EXPECT_STREQ(optimizer_name(OptimizerKind::adamw_8bit), "adamw_8bit");
  EXPECT_DOUBLE_EQ(optimizer_state_bytes_per_element(OptimizerKind::adamw), 8.0);
  EXPECT_DOUBLE_EQ(optimizer_state_bytes_per_element(OptimizerKind::adamw_8bit), 2.0 + 8.0 / 2048);
}

}  // namespace
}  // namespace autotrain::adamw_8bit_test
