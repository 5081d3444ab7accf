#include <gtest/gtest.h>

#include <cmath>

#include "autotrain/core/dtype.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/log.hpp"
#include "autotrain/core/strings.hpp"

namespace autotrain::core_test {
namespace {

TEST(Strings, SuggestsClosestNameTreatingDashesAsUnderscores) {
  const std::vector<std::string> names = {"batch_size", "block_size", "lr",
                                          "gradient_accumulation"};
  EXPECT_EQ(closest_match("batch-sise", names), "batch_size");
  EXPECT_EQ(closest_match("gradient-accumulaton", names), "gradient_accumulation");
  EXPECT_EQ(closest_match("completely_unrelated", names), "");
  EXPECT_EQ(did_you_mean("bach_size", names), " (did you mean 'batch_size'?)");
}

TEST(Strings, EditDistanceCountsInsertionsDeletionsSubstitutions) {
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("same", "same"), 0u);
}

TEST(Strings, SplitsJoinsAndTrims) {
  EXPECT_EQ(split("a,b,,c", ','), (std::vector<std::string>{"a", "b", "", "c"}));
  EXPECT_EQ(join({"x", "y"}, ", "), "x, y");
  EXPECT_EQ(trim("  padded\t\n"), "padded");
  EXPECT_EQ(human_bytes(1536), "1.50 KiB");
}

TEST(Strings, EscapeBytesShowsControlAndInvalidBytesAsHexKeepingUtf8) {
  EXPECT_EQ(escape_bytes("a\\b caf\xc3\xa9"), "a\\b caf\xc3\xa9");
  EXPECT_EQ(escape_bytes(std::string("\x00\x1b[2J\x7f\xff\xc3", 8)),
            "\\x00\\x1B[2J\\x7F\\xFF\\xC3");
  EXPECT_EQ(escape_bytes("tab\tline\n"), "tab\\tline\\n");
  EXPECT_EQ(escape_bytes("\xed\xa0\x80"), "\\xED\\xA0\\x80");  // a surrogate is not UTF-8
  EXPECT_EQ(escape_bytes(std::string(300, 'x'), 10), "xxxxxxxxxx...");
}

TEST(DType, Bf16RoundsToNearestEven) {
  EXPECT_EQ(bf16_to_float(float_to_bf16(1.0f)), 1.0f);
  EXPECT_EQ(bf16_to_float(float_to_bf16(-2.5f)), -2.5f);
  // 1 + 2^-8 is exactly half-way between two bf16 values: ties go to the even one (1.0).
  EXPECT_EQ(bf16_to_float(float_to_bf16(1.0f + std::ldexp(1.0f, -8))), 1.0f);
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(NAN))));
}

TEST(DType, Fp16RoundTripsRepresentableValuesAndSaturatesToInfinity) {
  for (float value : {0.0f, 1.0f, -3.5f, 65504.0f, 6.103515625e-05f, 5.9604644775390625e-08f}) {
    EXPECT_EQ(fp16_to_float(float_to_fp16(value)), value) << value;
  }
  EXPECT_TRUE(std::isinf(fp16_to_float(float_to_fp16(1e6f))));
  EXPECT_NEAR(fp16_to_float(float_to_fp16(0.1f)), 0.1f, 1e-4f);
  EXPECT_TRUE(std::isnan(fp16_to_float(float_to_fp16(NAN))));
}

TEST(DType, RejectsUnknownDtypeNamingTheSource) {
  EXPECT_EQ(parse_dtype("bfloat16", "x"), DType::bf16);
  try {
    parse_dtype("fp8", "--export-dtype");
    FAIL();
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("--export-dtype"), std::string::npos);
    EXPECT_NE(std::string(error.what()).find("fp8"), std::string::npos);
  }
}

TEST(Log, ParsesLevelsAndRejectsUnknownOnes) {
  EXPECT_EQ(log::parse_level("warn", "x"), log::Level::warning);
  EXPECT_THROW(log::parse_level("loud", "--log-level"), Error);
}

}  // namespace
}  // namespace autotrain::core_test
