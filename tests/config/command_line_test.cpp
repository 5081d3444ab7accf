// The train subcommand's command line: spellings, booleans, errors with suggestions, --help.
#include "autotrain/config/command_line.hpp"

#include <gtest/gtest.h>

#include "autotrain/core/strings.hpp"
#include "autotrain/model/folder.hpp"
#include "expect_error.hpp"
#include "test_support.hpp"

namespace autotrain::config::command_line_test {
namespace {

using autotrain::testing::contains;
using autotrain::testing::error_message;

TEST(TrainCommandLine, ReadsFilesModesAndParameterFlagsInOrder) {
  const TrainCommandLine line =
      parse_train_command_line({"--config", "c.yaml", "--training_config", "p.json", "--dry-run",
                                "--batch-size", "8", "--lr=1e-4", "--max_steps", "-1"});
  EXPECT_EQ(line.config, "c.yaml");
  EXPECT_EQ(line.training_config, "p.json");
  EXPECT_TRUE(line.dry_run);
  EXPECT_FALSE(line.help);
  ASSERT_EQ(line.flags.size(), 3u);
  EXPECT_EQ(line.flags[0].name, "batch_size");
  EXPECT_EQ(line.flags[0].spelling, "--batch-size");
  EXPECT_EQ(line.flags[0].text, "8");
  EXPECT_EQ(line.flags[1].text, "1e-4");
  EXPECT_EQ(line.flags[2].spelling, "--max_steps");
  EXPECT_EQ(line.flags[2].text, "-1");  // a negative value is a value, not an option
}

TEST(TrainCommandLine, KebabAndSnakeFlagsResolveToTheSameParams) {
  const auto kebab =
      load_params(parse_train_command_line({"--batch-size", "8"}).inputs(), model::folder_shape);
  const auto snake =
      load_params(parse_train_command_line({"--batch_size", "8"}).inputs(), model::folder_shape);
  EXPECT_EQ(kebab.params.batch_size, 8);
  EXPECT_EQ(kebab.params, snake.params);
}

TEST(TrainCommandLine, BooleanDefaultingToTrueCanBeSwitchedOff) {
  const auto off = load_params(parse_train_command_line({"--add-eos-token", "false"}).inputs(),
                               model::folder_shape);
  EXPECT_FALSE(off.params.add_eos_token);
  const auto bare =
      load_params(parse_train_command_line({"--async-checkpoint", "--seed", "1"}).inputs(),
                  model::folder_shape);
  EXPECT_TRUE(bare.params.async_checkpoint);
  EXPECT_EQ(bare.params.seed, 1);
  const auto equals =
      load_params(parse_train_command_line({"--add_eos_token=no"}).inputs(), model::folder_shape);
  EXPECT_FALSE(equals.params.add_eos_token);
}

TEST(TrainCommandLine, RejectsUnknownFlagWithSuggestion) {
  EXPECT_EQ(error_message([] {
              parse_train_command_line({"--batch-sise", "8"});
            }),
            "train: unknown option '--batch-sise' (did you mean '--batch-size'?); see autotrain "
            "train --help");
  EXPECT_TRUE(contains(error_message([] { parse_train_command_line({"--dryrun"}); }),
                       "(did you mean '--dry-run'?)"));
  EXPECT_TRUE(contains(error_message([] {
                         parse_train_command_line({"--save-steps", "50"});
                       }),
                       "(did you mean '--checkpoint-every'? that is what transformers"));
}

TEST(TrainCommandLine, DoesNotGuessFromPrefixes) {
  EXPECT_TRUE(contains(error_message([] {
                         parse_train_command_line({"--batch", "8"});
                       }),
                       "unknown option '--batch'"));
}

TEST(TrainCommandLine, RejectsMissingValueStrayArgumentAndRepeatedConfig) {
  EXPECT_TRUE(contains(error_message([] { parse_train_command_line({"--lr"}); }), "--lr"));
  EXPECT_TRUE(contains(error_message([] { parse_train_command_line({"config.yaml"}); }),
                       "unexpected argument 'config.yaml'"));
  EXPECT_TRUE(contains(error_message([] {
                         parse_train_command_line({"--config", "a.yaml", "--config", "b"});
                       }),
                       "--config is given twice"));
}

TEST(TrainCommandLine, FlagValuesAreCheckedWhenLoaded) {
  const TrainCommandLine line = parse_train_command_line({"--lr", "fast"});
  EXPECT_EQ(error_message([&] { load_params(line.inputs(), model::folder_shape); }),
            "--lr: expected a number, got 'fast'");
}

TEST(TrainCommandLine, HelpListsEveryParameterWithItsDefault) {
  EXPECT_TRUE(parse_train_command_line({"--help"}).help);
  EXPECT_TRUE(parse_train_command_line({"-h"}).help);
  const std::string help = train_help_text();
  for (const auto& spec : param_specs()) {
    EXPECT_TRUE(contains(help, "--" + to_kebab_case(spec.name) + " <")) << spec.name;
  }
  EXPECT_TRUE(contains(help, "--lr <number>  (default 3e-05; > 0)"));
  EXPECT_TRUE(contains(help,
                       "--optimizer <string>  (default adamw; "
                       "adamw|adamw_8bit|paged_adamw_8bit|paged_adamw_32bit|sgd)"));
}

TEST(ConfigurationDocs, CommittedDocsContainTheGeneratedParameterTable) {
  const std::string docs =
      autotrain::testing::read_file(autotrain::testing::source_path("docs/configuration.md"));
  EXPECT_TRUE(contains(docs, params_markdown_table()))
      << "docs/configuration.md is out of date; paste this table into it:\n"
      << params_markdown_table();
}

}  // namespace
}  // namespace autotrain::config::command_line_test
