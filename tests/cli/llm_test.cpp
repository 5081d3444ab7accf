// parse_llm_command: AutoTrain's `autotrain llm --train ...` as the train command it runs, and
// the ranks its --num-gpus / --num-processes ask for.
#include "autotrain/cli/llm.hpp"

#include <gtest/gtest.h>

#include "../config/expect_error.hpp"

namespace autotrain::cli::llm_test {
namespace {

using testing::contains;
using testing::error_message;
using Words = std::vector<std::string>;

TEST(Llm, IsTrainWithTheSameParameters) {
  const LlmCommand command = parse_llm_command(
      {"--train", "--model", "m", "--data-path", "d", "--project-name", "p", "--lr", "1e-4"});
  EXPECT_EQ(command.train_args, (Words{"train", "--model", "m", "--data-path", "d",
                                       "--project-name", "p", "--lr", "1e-4"}));
  EXPECT_EQ(command.num_gpus, -1);
  EXPECT_FALSE(command.help);
}

TEST(Llm, TakesTheRankCountsOut) {
  const LlmCommand gpus = parse_llm_command({"--train", "--num_gpus", "4", "--lr", "1"});
  EXPECT_EQ(gpus.num_gpus, 4);
  // Under a launcher, N is checked against the job's ranks on the node.
  EXPECT_EQ(gpus.train_args,
            (Words{"train", "--lr", "1", "--num-gpus-per-node", "4", "--device", "cuda"}));
  const LlmCommand cpu = parse_llm_command({"--train", "--num-gpus=0"});
  EXPECT_EQ(cpu.train_args, (Words{"train", "--device", "cpu"}));
  const LlmCommand processes = parse_llm_command({"--num-processes", "2", "--train"});
  EXPECT_EQ(processes.num_processes, 2);
  EXPECT_EQ(processes.train_args, (Words{"train"}));
}

TEST(Llm, RefusesWhatItCannotRunNamingTheFlag) {
  EXPECT_TRUE(contains(error_message([] {
                         parse_llm_command({"--model", "m"});
                       }),
                       "--train is missing"));
  EXPECT_TRUE(contains(error_message([] {
                         parse_llm_command({"--train", "--inference"});
                       }),
                       "--inference is not offered"));
  EXPECT_TRUE(contains(error_message([] {
                         parse_llm_command({"--train", "--num-gpus", "x"});
                       }),
                       "--num-gpus x: expected a count"));
  EXPECT_TRUE(contains(error_message([] {
                         parse_llm_command({"--train", "--num-gpus"});
                       }),
                       "--num-gpus needs a number"));
  EXPECT_TRUE(parse_llm_command({}).help);
  EXPECT_TRUE(parse_llm_command({"--help"}).help);
}

}  // namespace
}  // namespace autotrain::cli::llm_test
