// Integers read from JSON at their full width, range-checked.
#include "autotrain/core/json_integer.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <string>

namespace autotrain::json_integer_test {
namespace {

std::string error_of(const nlohmann::json& value, int lo = 1) {
  try {
    (void)json_integer<int>(value, "config.json: n_layer", lo);
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

TEST(JsonInteger, ReadsIntegersThatFit) {
  EXPECT_EQ(json_integer<int>(nlohmann::json(12), "n"), 12);
  EXPECT_EQ(json_integer<int>(nlohmann::json(-3), "n"), -3);
  EXPECT_EQ(json_integer<uint64_t>(nlohmann::json::parse("18446744073709551615"), "n"),
            ~uint64_t{0});
  EXPECT_EQ(json_integer<int64_t>(nlohmann::json::parse("-9223372036854775808"), "n"),
            std::numeric_limits<int64_t>::min());
}

TEST(JsonInteger, RefusesWhatNlohmannWouldTruncateOrConvert) {
  // get<int>() gives 2 for 4294967298 and 1 for 1.5; both must be refused, naming the key.
  EXPECT_EQ(error_of(nlohmann::json::parse("4294967298")),
            "config.json: n_layer should be an integer in [1, 2147483647], got 4294967298");
  EXPECT_NE(error_of(nlohmann::json(1.5)).find("got 1.5"), std::string::npos);
  EXPECT_NE(error_of(nlohmann::json("12")).find("got \"12\""), std::string::npos);
  EXPECT_NE(error_of(nlohmann::json(0)).find("[1, 2147483647], got 0"), std::string::npos);
  EXPECT_NE(error_of(nlohmann::json(-1), 0).find("got -1"), std::string::npos);
  EXPECT_NE(error_of(nlohmann::json(nullptr)).find("got null"), std::string::npos);
  EXPECT_THROW((void)json_integer<uint64_t>(nlohmann::json(-1), "n"), Error);
}

}  // namespace
}  // namespace autotrain::json_integer_test
