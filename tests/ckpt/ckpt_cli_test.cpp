// `autotrain ckpt inspect|verify` on a real checkpoint, alone and under mpirun. The checkpoint is
// written by a child process (this binary running the disabled helper) so that this process
// never initialises MPI and the binaries it starts see a clean launch environment.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "autotrain/ckpt/checkpoint.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/mpi.hpp"
#include "test_support.hpp"

extern char** environ;

namespace autotrain::ckpt::ckpt_cli_test {
namespace {
namespace fs = std::filesystem;

constexpr const char* kFileVariable = "AUTOTRAIN_CKPT_CLI_FILE";

TEST(CkptCli, DISABLED_WritesCheckpointHelper) {
  const char* file = std::getenv(kFileVariable);
  if (file == nullptr) GTEST_SKIP() << "run by the CkptCli tests";
  int argc = 0;
  char** argv = nullptr;
  MpiSession mpi(&argc, &argv);
  std::vector<float> weights(24, 0.5f);
  std::vector<float> moments(24, 0.25f);
  CheckpointContent content;
  content.tensors = {{"model/transformer.h.0.mlp.c_fc.weight", 24, {4, 6}},
                     {"optimizer/exp_avg_sq/transformer.h.0.mlp.c_fc.weight", 24, {4, 6}}};
  content.pieces = {{0, 0, weights}, {1, 0, moments}};
  content.state.step = 7;
  content.state.zero_stage = 2;
  content.state.json["model_config"] = R"({"n_layer": 1, "n_embd": 6, "n_head": 2})";
  write_checkpoint(file, content, {}, MPI_COMM_WORLD);
}

int spawn_and_wait(const std::vector<std::string>& command,
                   const std::vector<std::string>& extra_env) {
  std::vector<char*> arguments;
  for (const auto& word : command) arguments.push_back(const_cast<char*>(word.c_str()));
  arguments.push_back(nullptr);
  std::vector<char*> environment;
  for (char** entry = environ; *entry != nullptr; ++entry) environment.push_back(*entry);
  for (const auto& entry : extra_env) environment.push_back(const_cast<char*>(entry.c_str()));
  environment.push_back(nullptr);
  pid_t child = 0;
  if (posix_spawn(&child, arguments[0], nullptr, nullptr, arguments.data(), environment.data()) !=
      0) {
    return -1;
  }
  int status = 0;
  waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

class CkptCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(AUTOTRAIN_BINARY)) GTEST_SKIP() << "autotrain is not built";
    const std::string self = fs::read_symlink("/proc/self/exe").string();
    ASSERT_EQ(spawn_and_wait({self, "--gtest_also_run_disabled_tests",
                              "--gtest_filter=CkptCli.DISABLED_WritesCheckpointHelper"},
                             {cat(kFileVariable, "=", file_.string())}),
              0);
  }

  // Runs `autotrain <args>` through the shell, returns its exit code; output in output_.
  int autotrain(const std::string& args, const std::string& launcher = "") {
    const fs::path log = dir_ / "out.txt";
    const int status = std::system(
        cat(launcher, " ", AUTOTRAIN_BINARY, " ", args, " > ", log.string(), " 2>&1").c_str());
    output_ = testing::read_file(log);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  testing::TempDir dir_;
  fs::path file_ = dir_ / "checkpoint-7.h5";
  std::string output_;
};

TEST_F(CkptCliTest, InspectShowsStepStageConfigAndDatasets) {
  ASSERT_EQ(autotrain("ckpt inspect " + file_.string()), 0) << output_;
  for (const char* expected :
       {"autotrain-checkpoint version 1", "step              7", "ZeRO stage        2", "n_embd=6",
        "model/transformer.h.0.mlp.c_fc.weight  ", "[4, 6]", "2 datasets, 192 B"}) {
    EXPECT_NE(output_.find(expected), std::string::npos) << expected << "\n" << output_;
  }
}

TEST_F(CkptCliTest, VerifyPassesThenNamesTheCorruptedDatasetAndFails) {
  ASSERT_EQ(autotrain("ckpt verify " + file_.string()), 0) << output_;
  EXPECT_NE(output_.find("OK "), std::string::npos) << output_;
  ASSERT_EQ(autotrain("ckpt verify " + file_.string(), cat(AUTOTRAIN_MPIRUN, " -np 2")), 0)
      << output_;
  EXPECT_NE(output_.find("on 2 ranks"), std::string::npos) << output_;

  hid_t file = H5Fopen(file_.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t dataset =
      H5Dopen2(file, "optimizer/exp_avg_sq/transformer.h.0.mlp.c_fc.weight", H5P_DEFAULT);
  const haddr_t offset = H5Dget_offset(dataset);
  H5Dclose(dataset);
  H5Fclose(file);
  {
    std::fstream stream(file_, std::ios::in | std::ios::out | std::ios::binary);
    stream.seekp(static_cast<std::streamoff>(offset + 40));
    stream.put('\x7f');
  }
  EXPECT_EQ(autotrain("ckpt verify " + file_.string()), 1) << output_;
  EXPECT_NE(output_.find("FAILED"), std::string::npos) << output_;
  EXPECT_NE(output_.find("optimizer/exp_avg_sq/transformer.h.0.mlp.c_fc.weight: checksum mismatch"),
            std::string::npos)
      << output_;
}

TEST_F(CkptCliTest, UnknownActionSuggestsTheClosestOne) {
  EXPECT_NE(autotrain("ckpt verfy " + file_.string()), 0);
  EXPECT_NE(output_.find("did you mean 'verify'"), std::string::npos) << output_;
}

}  // namespace
}  // namespace autotrain::ckpt::ckpt_cli_test
