// The shipped example config must load, so users can start from it.
#include <gtest/gtest.h>

#include "autotrain/config/load.hpp"
#include "autotrain/model/folder.hpp"
#include "test_support.hpp"

namespace autotrain::config::example_config_test {
namespace {

TEST(ExampleConfig, ShippedExampleLoadsAndResolves) {
  const auto path = autotrain::testing::source_path("configs/example.yaml");
  const ResolvedParams resolved = load_params(ConfigInputs{path, {}, {}}, model::folder_shape);
  EXPECT_EQ(resolved.params.project_name, "gpt2-example");
  EXPECT_EQ(resolved.params.zero_stage, 3);
  EXPECT_EQ(resolved.params.block_size, 512);
  EXPECT_EQ(resolved.params.mixed_precision, "no");
  EXPECT_EQ(resolved.provenance.at("lr"), path.string() + ":params.lr");
}

}  // namespace
}  // namespace autotrain::config::example_config_test
