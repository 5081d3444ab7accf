// 4- and 8-bit weights (kernels/quantize.hpp): the formats' properties, and every record and
// dequantized value bit for bit against a PyTorch reference written from bitsandbytes' definition
// (tests/kernels/torch_quantize.py).
#include "autotrain/kernels/quantize.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "autotrain/core/dynamic_map.hpp"
#include "autotrain/core/error.hpp"
#include "test_support.hpp"

namespace autotrain::kernels::quantize_test {
namespace {

std::vector<float> normal_values(std::size_t n, std::uint32_t seed, float scale) {
  std::mt19937 engine(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> values(n);
  for (auto& v : values) v = normal(engine);
  return values;
}

std::vector<float> round_trip(const QuantizedTensor& t, const std::vector<float>& x) {
  std::vector<std::byte> record(t.bytes);
  quantize(t, x.data(), record.data());
  std::vector<float> out(t.numel());
  dequantize(t, record.data(), out.data());
  return out;
}

TEST(Quantize, TheDynamicMapIsBitsandbytesSigned) {
  const auto& map = signed_dynamic_map();
  EXPECT_TRUE(std::is_sorted(map.begin(), map.end()));
  EXPECT_EQ(std::adjacent_find(map.begin(), map.end()), map.end()) << "a value twice";
  EXPECT_EQ(map.back(), 1.0f);
  EXPECT_EQ(std::count(map.begin(), map.end(), 0.0f), 1);
  EXPECT_EQ(map[127], 0.0f);
  for (std::size_t i = 0; i < 127; ++i) EXPECT_EQ(map[i], -map[254 - i]) << i;  // ± pairs
  EXPECT_NEAR(map.front(), -0.99296875f, 1e-6f);  // −(1 − 0.9/64 + 1) / 2
  EXPECT_NEAR(map[126], -5.5e-7f, 1e-12f);  // the smallest magnitude: 10⁻⁶ · (0.1 + 1) / 2
}

TEST(Quantize, RecordSizes) {
  const auto nf4 = quantized_tensor(QuantKind::nf4, false, 64, 64);  // 4096 weights, 64 blocks
  EXPECT_EQ(nf4.bytes, 2048u + 64 * 4);
  const auto doubled = quantized_tensor(QuantKind::nf4, true, 64, 64);
  EXPECT_EQ(doubled.bytes, 2048u + 64 + 2 * 4);  // codes, absmax codes, one absmax2, the offset
  const auto odd = quantized_tensor(QuantKind::nf4, false, 5, 13);  // 65: two blocks, a last nibble
  EXPECT_EQ(odd.bytes, 36u + 2 * 4);
  const auto int8 = quantized_tensor(QuantKind::int8, false, 3, 5);
  EXPECT_EQ(int8.bytes, 16u + 3 * 4);
  EXPECT_FALSE(quantized_tensor(QuantKind::int8, true, 3, 5).double_quant);
}

TEST(Quantize, Nf4GivesTheNearestLevelTimesTheBlockAbsmax) {
  const auto t = quantized_tensor(QuantKind::nf4, false, 3, 70);
  auto x = normal_values(t.numel(), 1, 0.02f);
  std::fill(x.begin() + 64, x.begin() + 128, 0.0f);  // a block of zeros
  const auto out = round_trip(t, x);
  for (std::size_t b = 0; b < t.blocks(); ++b) {
    const std::size_t begin = b * kNf4Block, end = std::min(t.numel(), begin + kNf4Block);
    float absmax = 0;
    for (std::size_t i = begin; i < end; ++i) absmax = std::max(absmax, std::fabs(x[i]));
    for (std::size_t i = begin; i < end; ++i) {
      float best = kNf4Levels[0];
      for (float level : kNf4Levels) {
        if (std::fabs(level * absmax - x[i]) < std::fabs(best * absmax - x[i])) best = level;
      }
      EXPECT_NEAR(out[i], best * absmax, 1e-6f * absmax) << i;
    }
  }
  EXPECT_TRUE(std::all_of(out.begin() + 64, out.begin() + 128, [](float v) { return v == 0; }));
}

TEST(Quantize, DoubleQuantizationKeepsEachAbsmaxWithinItsCodesStep) {
  const auto plain = quantized_tensor(QuantKind::nf4, false, 300, 130);  // 610 blocks
  const auto doubled = quantized_tensor(QuantKind::nf4, true, 300, 130);
  const auto x = normal_values(plain.numel(), 2, 0.05f);
  const auto a = round_trip(plain, x), b = round_trip(doubled, x);
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i] != 0) worst = std::max(worst, std::fabs(double(b[i]) / a[i] - 1));
  }
  EXPECT_GT(worst, 0.0);   // the absmax did change
  EXPECT_LT(worst, 0.02);  // by the map's resolution near its ends
}

TEST(Quantize, Int8IsPerRowAbsmaxOver127) {
  const auto t = quantized_tensor(QuantKind::int8, false, 7, 33);
  auto x = normal_values(t.numel(), 3, 1.0f);
  std::fill(x.begin(), x.begin() + 33, 0.0f);  // a row of zeros
  const auto out = round_trip(t, x);
  for (std::size_t r = 1; r < t.rows; ++r) {
    float absmax = 0;
    for (std::size_t c = 0; c < t.cols; ++c) absmax = std::max(absmax, std::fabs(x[r * 33 + c]));
    for (std::size_t c = 0; c < t.cols; ++c) {
      EXPECT_LE(std::fabs(out[r * 33 + c] - x[r * 33 + c]), absmax / 254 * 1.0001f);
    }
  }
  EXPECT_TRUE(std::all_of(out.begin(), out.begin() + 33, [](float v) { return v == 0; }));
}

TEST(Quantize, RefusesOtherNames) {
  EXPECT_EQ(parse_quant_kind("int4", "quantization"), QuantKind::nf4);
  EXPECT_EQ(parse_quant_kind("int8", "quantization"), QuantKind::int8);
  EXPECT_THROW(parse_quant_kind("fp4", "quantization"), Error);
}

void write_bytes(const std::filesystem::path& path, const void* data, std::size_t bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
}

TEST(Quantize, RecordsAndValuesMatchPyTorchBitForBit) {
  const std::string python = std::getenv("PYTHON") ? std::getenv("PYTHON") : "/usr/bin/python3";
  if (!std::filesystem::exists(python)) GTEST_SKIP() << python << " not found (set PYTHON)";
  struct Case {
    QuantKind kind;
    bool double_quant;
    std::size_t rows, cols;
    float scale;
  };
  const std::vector<Case> cases = {{QuantKind::nf4, false, 3, 100, 0.02f},
                                   {QuantKind::nf4, false, 5, 77, 1.0f},  // odd: a last nibble
                                   {QuantKind::nf4, true, 130, 300, 0.05f},
                                   {QuantKind::nf4, true, 9, 64, 3.0f},
                                   {QuantKind::int8, false, 7, 33, 0.5f},
                                   {QuantKind::int8, false, 64, 48, 0.02f}};
  const testing::TempDir dir;
  std::string list;
  for (std::size_t k = 0; k < cases.size(); ++k) {
    const Case& c = cases[k];
    const auto t = quantized_tensor(c.kind, c.double_quant, c.rows, c.cols);
    auto x = normal_values(t.numel(), 10 + std::uint32_t(k), c.scale);
    std::fill(x.begin(), x.begin() + std::min<std::size_t>(64, x.size()), 0.0f);  // zeros
    std::vector<std::byte> record(t.bytes);
    quantize(t, x.data(), record.data());
    std::vector<float> out(t.numel());
    dequantize(t, record.data(), out.data());
    const std::string name = "case" + std::to_string(k);
    write_bytes(dir / (name + ".x"), x.data(), x.size() * 4);
    write_bytes(dir / (name + ".record"), record.data(), record.size());
    write_bytes(dir / (name + ".out"), out.data(), out.size() * 4);
    list += (k ? ",\n" : "") + std::string("{\"name\": \"") + name + "\", \"kind\": \"" +
            (c.kind == QuantKind::nf4 ? "nf4" : "int8") +
            "\", \"double_quant\": " + (t.double_quant ? "true" : "false") +
            ", \"rows\": " + std::to_string(c.rows) + ", \"cols\": " + std::to_string(c.cols) +
            ", \"scales\": " + std::to_string(t.scales) +
            ", \"scales2\": " + std::to_string(t.scales2) + "}";
  }
  const auto& map = signed_dynamic_map();
  write_bytes(dir / "dynamic_map", map.data(), sizeof map);
  testing::write_file(dir / "cases.json", "[" + list + "]");
  const std::string command = python + " " +
                              testing::source_path("tests/kernels/torch_quantize.py").string() +
                              " " + dir.path().string();
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
}

}  // namespace
}  // namespace autotrain::kernels::quantize_test
