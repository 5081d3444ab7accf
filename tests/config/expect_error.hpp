#pragma once
// Runs `action`, which must throw autotrain::Error, and returns the message (empty, with a test
// failure, when nothing was thrown).
#include <gtest/gtest.h>

#include <string>

#include "autotrain/core/error.hpp"

namespace autotrain::testing {

template <typename Action>
std::string error_message(Action&& action) {
  try {
    action();
  } catch (const Error& error) {
    return error.what();
  }
  ADD_FAILURE() << "expected an autotrain::Error";
  return {};
}

inline ::testing::AssertionResult contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << text << "' does not contain '" << part << "'";
}

}  // namespace autotrain::testing
