// The models of one allocation: the sweep block (grid and list), num_models without a sweep,
// and the errors of both.
#include "autotrain/config/sweep.hpp"

#include <gtest/gtest.h>

#include "autotrain/model/folder.hpp"
#include "expect_error.hpp"
#include "test_support.hpp"

namespace autotrain::config::sweep_test {
namespace {

using autotrain::testing::contains;
using autotrain::testing::error_message;
using autotrain::testing::TempDir;
using autotrain::testing::write_file;

class Sweep : public ::testing::Test {
 protected:
  std::filesystem::path yaml(const std::string& text) {
    const auto path = dir_.path() / "c.yaml";
    write_file(path, "params:\n  lr: 1e-3\n  seed: 5\n" + text);
    return path;
  }
  ModelsPlan plan(const std::string& text, std::vector<FlagValue> flags = {}) {
    return plan_models(ConfigInputs{yaml(text), {}, std::move(flags)});
  }
  TempDir dir_;
};

TEST_F(Sweep, GridIsEveryCombinationWithTheLastKeyFastest) {
  const auto models = plan("sweep:\n  lr: [1e-4, 3e-4]\n  seed: [1, 2, 3]\n");
  ASSERT_EQ(models.models.size(), 6u);
  EXPECT_TRUE(models.grouped);
  EXPECT_EQ(describe_changes(models.models[0]), "lr 1e-4, seed 1");
  EXPECT_EQ(describe_changes(models.models[2]), "lr 1e-4, seed 3");
  EXPECT_EQ(describe_changes(models.models[3]), "lr 3e-4, seed 1");
  EXPECT_EQ(models.models[4].changes[1].spelling,
            (dir_.path() / "c.yaml").string() + ":sweep.seed[1]");
  EXPECT_TRUE(contains(models.source, "c.yaml:sweep"));
}

TEST_F(Sweep, ListHasOneModelPerRunAndAnEmptyRunIsTheBaseline) {
  const auto models =
      plan("sweep:\n  mode: list\n  runs:\n    - {lr: 1e-4, base_model: gpt2}\n    -\n");
  ASSERT_EQ(models.models.size(), 2u);
  EXPECT_EQ(describe_changes(models.models[0]), "lr 1e-4, model gpt2");
  EXPECT_EQ(describe_changes(models.models[1]), "-");
}

TEST_F(Sweep, ChangesApplyAfterFlagsWithTheirProvenance) {
  const auto models = plan("sweep:\n  lr: [2e-4, 4e-4]\n");
  ConfigInputs inputs{yaml("sweep:\n  lr: [2e-4, 4e-4]\n"), {}, {}, models.models[1].changes};
  const ResolvedParams resolved = load_params(inputs, model::folder_shape);
  EXPECT_EQ(resolved.params.lr, 4e-4);
  EXPECT_TRUE(contains(resolved.provenance.at("lr"), "c.yaml:sweep.lr[1]"));
}

TEST_F(Sweep, NumModelsWithoutASweepVariesTheSeed) {
  const auto models = plan("", {{"num_models", "--num-models", "3"}});
  ASSERT_EQ(models.models.size(), 3u);
  EXPECT_EQ(models.source, "num_models");
  EXPECT_EQ(describe_changes(models.models[2]), "seed 7");
  const auto single = plan("");
  EXPECT_FALSE(single.grouped);
  ASSERT_EQ(single.models.size(), 1u);
  EXPECT_TRUE(single.models[0].changes.empty());
}

TEST_F(Sweep, ErrorsNameTheKeyAndWhatIsExpected) {
  EXPECT_TRUE(contains(error_message([&] { plan("sweep:\n  lrr: [1]\n"); }),
                       "c.yaml:sweep.lrr: unknown parameter 'lrr' (did you mean 'lr'?)"));
  EXPECT_TRUE(contains(error_message([&] { plan("sweep:\n  project_name: [a, b]\n"); }),
                       "'project_name' cannot vary between the models of one allocation"));
  EXPECT_TRUE(contains(error_message([&] { plan("sweep:\n  lr: [1e-3, fast]\n"); }),
                       "sweep.lr[1]: expected a number, got 'fast'"));
  EXPECT_TRUE(contains(error_message([&] { plan("sweep:\n  lr: []\n"); }),
                       "sweep.lr: expected at least one value"));
  EXPECT_TRUE(contains(error_message([&] { plan("sweep:\n  mode: list\n  runs: []\n"); }),
                       "sweep.runs: expected a non-empty list of runs"));
  EXPECT_TRUE(contains(error_message([&] { plan("sweep:\n  mode: random\n"); }),
                       "sweep.mode: expected grid or list, got 'random'"));
  EXPECT_TRUE(contains(error_message([&] {
                         plan("sweep:\n  lr: [1e-3, 2e-3]\n", {{"lr", "--lr", "1e-2"}});
                       }),
                       "--lr: lr is varied by"));
  EXPECT_TRUE(
      contains(error_message([&] {
                 plan("sweep:\n  lr: [1e-3, 2e-3]\n", {{"num_models", "--num-models", "3"}});
               }),
               "num_models 3 (--num-models) disagrees with"));
}

}  // namespace
}  // namespace autotrain::config::sweep_test
