#include "autotrain/ckpt/checksum.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace autotrain::ckpt::checksum_test {
namespace {

const std::vector<float> kValues = {1.0f, 2.0f, -0.5f, 3.25f, 0.0f};

TEST(Checksum, MatchesTheDocumentedDefinition) {
  // Computed independently from docs/checkpoint-format.md (Python integers).
  EXPECT_EQ(checksum_piece(0, kValues), 0xa3ecca671e9493f8ull);
}

TEST(Checksum, DoesNotDependOnHowTheTensorIsSplit) {
  const std::span<const float> all(kValues);
  EXPECT_EQ(checksum_piece(0, all.first(2)) + checksum_piece(2, all.subspan(2)),
            checksum_piece(0, all));
  EXPECT_EQ(checksum_piece(0, all.first(1)) + checksum_piece(1, all.subspan(1, 3)) +
                checksum_piece(4, all.subspan(4)),
            checksum_piece(0, all));
}

TEST(Checksum, SwappedValuesChangeIt) {
  std::vector<float> swapped = kValues;
  std::swap(swapped[0], swapped[1]);
  EXPECT_NE(checksum_piece(0, swapped), checksum_piece(0, kValues));
}

}  // namespace
}  // namespace autotrain::ckpt::checksum_test
