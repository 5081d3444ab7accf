// recompute (activation checkpointing's mode) and AutoTrain's disable_gradient_checkpointing:
// the mode follows the switch unless given; given both, the weaker source yields with a note, a
// training_params.json the weakest, and two as strong that disagree are an error naming both.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "autotrain/config/command_line.hpp"
#include "autotrain/config/load.hpp"
#include "autotrain/model/folder.hpp"
#include "expect_error.hpp"
#include "test_support.hpp"

namespace autotrain::config::recompute_test {
namespace {

using testing::contains;
using testing::error_message;
using testing::TempDir;
using testing::write_file;

ResolvedParams load(const std::filesystem::path& yaml, const std::filesystem::path& json,
                    const std::vector<std::string>& args) {
  ConfigInputs inputs = parse_train_command_line(args).inputs();
  inputs.yaml = yaml;
  inputs.training_params = json;
  return load_params(inputs, model::folder_shape);
}

ResolvedParams from_flags(const std::vector<std::string>& args) {
  return load({}, {}, args);
}

TEST(Recompute, FollowsDisableGradientCheckpointingUnlessGiven) {
  const ResolvedParams by_default = from_flags({});
  EXPECT_EQ(by_default.params.recompute, "selective");
  EXPECT_EQ(by_default.provenance.at("recompute"),
            "derived from disable_gradient_checkpointing (false)");
  const ResolvedParams kept = from_flags({"--disable-gradient-checkpointing", "true"});
  EXPECT_EQ(kept.params.recompute, "none");
  const ResolvedParams full = from_flags({"--recompute", "full"});
  EXPECT_EQ(full.params.recompute, "full");
  EXPECT_FALSE(full.params.disable_gradient_checkpointing);
  EXPECT_TRUE(full.notes.empty());
}

TEST(Recompute, NoneSetsTheSwitchSoThatTheWrittenParametersAgree) {
  const ResolvedParams none = from_flags({"--recompute", "none"});
  EXPECT_EQ(none.params.recompute, "none");
  EXPECT_TRUE(none.params.disable_gradient_checkpointing);
  EXPECT_EQ(none.provenance.at("disable_gradient_checkpointing"), "derived from recompute (none)");
  EXPECT_TRUE(none.notes.empty());
}

TEST(Recompute, ContradictingTheSwitchFromAsStrongASourceIsAnErrorNamingBoth) {
  const TempDir dir;
  write_file(dir / "x.yaml",
             "params:\n  disable_gradient_checkpointing: true\n  recompute: full\n");
  const std::string message = error_message([&] { load(dir / "x.yaml", {}, {}); });
  EXPECT_TRUE(contains(message, "recompute full (from "));
  EXPECT_TRUE(contains(message, "contradicts disable_gradient_checkpointing true (from "));
  EXPECT_TRUE(contains(
      error_message([&] {
        from_flags({"--recompute", "none", "--disable-gradient-checkpointing", "false"});
      }),
      "recompute none (from --recompute) contradicts disable_gradient_checkpointing false (from "
      "--disable-gradient-checkpointing)"));
}

TEST(Recompute, TheWeakerSourceYieldsWithANote) {
  const TempDir dir;
  write_file(dir / "x.yaml", "params:\n  disable_gradient_checkpointing: true\n");
  const ResolvedParams flag_wins = load(dir / "x.yaml", {}, {"--recompute", "full"});
  EXPECT_EQ(flag_wins.params.recompute, "full");
  EXPECT_FALSE(flag_wins.params.disable_gradient_checkpointing);
  ASSERT_EQ(flag_wins.notes.size(), 1u);
  EXPECT_TRUE(contains(flag_wins.notes[0], "is replaced by false, derived from recompute (full)"));

  write_file(dir / "y.yaml", "params:\n  recompute: full\n");
  const ResolvedParams switch_wins =
      load(dir / "y.yaml", {}, {"--disable-gradient-checkpointing", "true"});
  EXPECT_EQ(switch_wins.params.recompute, "none");
  ASSERT_EQ(switch_wins.notes.size(), 1u);
  EXPECT_TRUE(contains(switch_wins.notes[0], "recompute full (from "));
  EXPECT_TRUE(contains(switch_wins.notes[0],
                       "is replaced by none, derived from "
                       "disable_gradient_checkpointing (true)"));
}

TEST(Recompute, ARunsTrainingParamsJsonYieldsToAYamlBesideIt) {
  // What a run with recompute none wrote, rerun with AutoTrain's switch in a YAML.
  const TempDir dir;
  write_file(dir / "training_params.json",
             R"({"disable_gradient_checkpointing": true, "recompute": "none"})");
  write_file(dir / "x.yaml", "params:\n  recompute: selective\n");
  const ResolvedParams resolved = load(dir / "x.yaml", dir / "training_params.json", {});
  EXPECT_EQ(resolved.params.recompute, "selective");
  EXPECT_FALSE(resolved.params.disable_gradient_checkpointing);
  ASSERT_EQ(resolved.notes.size(), 1u);
}

TEST(Recompute, RefusesAnUnknownModeNamingTheChoices) {
  const std::string message = error_message([&] { from_flags({"--recompute", "partial"}); });
  EXPECT_TRUE(contains(message, "partial"));
  EXPECT_TRUE(contains(message, "selective"));
}

}  // namespace
}  // namespace autotrain::config::recompute_test
