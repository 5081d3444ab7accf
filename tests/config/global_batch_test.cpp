// global_batch_size: gradient_accumulation derived for the job's world size (derive_for_world).
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "autotrain/config/command_line.hpp"
#include "autotrain/config/load.hpp"
#include "autotrain/model/folder.hpp"
#include "expect_error.hpp"
#include "test_support.hpp"

namespace autotrain::config::global_batch_test {
namespace {

using testing::contains;
using testing::error_message;

ResolvedParams from_flags(const std::vector<std::string>& args) {
  return load_params(parse_train_command_line(args).inputs(), model::folder_shape);
}

TEST(GlobalBatchSize, DerivesTheAccumulationForEachWorldSize) {
  for (const auto& [world, accumulation] :
       std::vector<std::pair<int, int64_t>>{{1, 6}, {2, 3}, {3, 2}, {6, 1}}) {
    ResolvedParams resolved = from_flags({"--global-batch-size", "24", "--batch-size", "4"});
    derive_for_world(resolved, world);
    EXPECT_EQ(resolved.params.gradient_accumulation, accumulation) << world << " rank(s)";
    EXPECT_EQ(resolved.provenance.at("gradient_accumulation"),
              "derived from global_batch_size (24 / batch_size 4 / " + std::to_string(world) +
                  " rank(s))");
  }
}

TEST(GlobalBatchSize, UnsetLeavesTheAccumulationAlone) {
  ResolvedParams resolved = from_flags({"--gradient-accumulation", "5"});
  derive_for_world(resolved, 3);
  EXPECT_EQ(resolved.params.gradient_accumulation, 5);
  EXPECT_EQ(resolved.provenance.at("gradient_accumulation"), "--gradient-accumulation");
}

TEST(GlobalBatchSize, AJobThatCannotDivideItIsRefusedWithTheSizesThatWould) {
  ResolvedParams resolved = from_flags({"--global-batch-size", "24", "--batch-size", "4"});
  const std::string message = error_message([&] { derive_for_world(resolved, 5); });
  EXPECT_TRUE(contains(message,
                       "global_batch_size 24 (from --global-batch-size) is not a multiple "
                       "of batch_size 4 (from --batch-size) x 5 rank(s) = 20"));
  EXPECT_TRUE(contains(message, "with batch_size 4 it divides on 1, 2, 3, 6 rank(s)"));
  EXPECT_TRUE(contains(message, "on 5 rank(s) no batch_size divides it"));
  ResolvedParams even = from_flags({"--global-batch-size", "24", "--batch-size", "8"});
  EXPECT_TRUE(contains(error_message([&] { derive_for_world(even, 2); }),
                       "on 2 rank(s) batch_size 1, 2, 3, 4, 6, 12 would"));
}

TEST(GlobalBatchSize, AnAccumulationGivenAsStronglyMustAgree) {
  ResolvedParams both = from_flags(
      {"--global-batch-size", "24", "--batch-size", "4", "--gradient-accumulation", "2"});
  EXPECT_TRUE(contains(error_message([&] { derive_for_world(both, 2); }),
                       "gradient_accumulation 2 (from --gradient-accumulation) and "
                       "global_batch_size 24 (from --global-batch-size) disagree: with batch_size "
                       "4 on 2 rank(s) the global batch needs 3; give only one of them"));
  ResolvedParams agreeing = from_flags(
      {"--global-batch-size", "24", "--batch-size", "4", "--gradient-accumulation", "3"});
  derive_for_world(agreeing, 2);
  EXPECT_EQ(agreeing.params.gradient_accumulation, 3);
}

TEST(GlobalBatchSize, AWeakerSourceYieldsWithANote) {
  // An earlier run's training_params.json (3 ranks: accumulation 2) resumed on 2 ranks.
  const testing::TempDir dir;
  const auto path = dir / "training_params.json";
  std::ofstream(path)
      << R"({"global_batch_size": 24, "batch_size": 4, "gradient_accumulation": 2})";
  ConfigInputs inputs;
  inputs.training_params = path;
  ResolvedParams resolved = load_params(inputs, model::folder_shape);
  derive_for_world(resolved, 2);
  EXPECT_EQ(resolved.params.gradient_accumulation, 3);
  ASSERT_EQ(resolved.notes.size(), 1u);
  EXPECT_TRUE(contains(resolved.notes[0], "is replaced by 3, derived from global_batch_size"));
}

}  // namespace
}  // namespace autotrain::config::global_batch_test
