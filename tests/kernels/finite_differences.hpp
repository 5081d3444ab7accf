#pragma once
// Central finite differences for the kernel tests (double precision).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <functional>
#include <vector>

namespace autotrain::kernels {

using Vec = std::vector<double>;

// Central differences with h = 1e-5 in double: truncation ~h², round-off ~1e-16/h, both far
// below the 1e-7 tolerance used throughout.
constexpr double kStep = 1e-5;
constexpr double kTolerance = 1e-7;

inline double dot(const Vec& a, const Vec& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// Checks analytic[i] == d objective / d x[i] for every i, perturbing x in place.
inline void expect_matches_finite_differences(Vec& x, const Vec& analytic,
                                              const std::function<double()>& objective,
                                              const char* what) {
  ASSERT_EQ(x.size(), analytic.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double saved = x[i];
    x[i] = saved + kStep;
    const double plus = objective();
    x[i] = saved - kStep;
    const double minus = objective();
    x[i] = saved;
    const double numeric = (plus - minus) / (2 * kStep);
    ASSERT_NEAR(analytic[i], numeric, kTolerance * std::max(1.0, std::abs(numeric)))
        << what << "[" << i << "]";
  }
}

}  // namespace autotrain::kernels
