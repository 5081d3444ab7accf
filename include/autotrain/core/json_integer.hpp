#pragma once
// Integers read from JSON files at their full width. nlohmann's get<int>() truncates
// 4294967298 to 2 without a word; a file a user or a damaged disk hands us must say instead
// that the value does not fit.
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string_view>
#include <utility>

#include "autotrain/core/error.hpp"

namespace autotrain {

// `value` as a T, when it is a JSON integer within [lo, hi]; otherwise an Error
// "<what> should be an integer in [lo, hi], got <value>".
template <typename T>
T json_integer(const nlohmann::json& value, std::string_view what,
               T lo = std::numeric_limits<T>::min(), T hi = std::numeric_limits<T>::max()) {
  const auto within = [&](auto v) {
    return std::cmp_greater_equal(v, lo) && std::cmp_less_equal(v, hi);
  };
  if (value.is_number_unsigned() && within(value.get<uint64_t>())) {
    return static_cast<T>(value.get<uint64_t>());
  }
  if (value.is_number_integer() && !value.is_number_unsigned() && within(value.get<int64_t>())) {
    return static_cast<T>(value.get<int64_t>());
  }
  throw Error(cat(what, " should be an integer in [", +lo, ", ", +hi, "], got ", value.dump()));
}

}  // namespace autotrain
