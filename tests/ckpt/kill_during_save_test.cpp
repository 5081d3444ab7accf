// A save killed with SIGKILL at an arbitrary moment leaves `latest` naming a complete, valid
// checkpoint, and `auto` never picks an unfinished one. A child process (this binary, running
// the disabled helper below) saves checkpoints in a loop, alternating layouts; the parent kills
// it while a temporary file exists, i.e. mid-save.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "autotrain/ckpt/checkpoint_dir.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/mpi.hpp"
#include "test_support.hpp"

extern char** environ;

namespace autotrain::ckpt::kill_during_save_test {
namespace {
namespace fs = std::filesystem;

constexpr const char* kFolderVariable = "AUTOTRAIN_CKPT_KILL_DIR";

TEST(KillDuringSave, DISABLED_SavesForeverHelper) {
  const char* folder = std::getenv(kFolderVariable);
  if (folder == nullptr) GTEST_SKIP() << "run by KillDuringSave.PreviousCheckpointSurvivesSigkill";
  int argc = 0;
  char** argv = nullptr;
  MpiSession mpi(&argc, &argv);
  CheckpointDir dir(folder);
  // 4 tensors of 2 MiB: each save takes long enough to be caught in the middle.
  std::vector<std::vector<float>> values(4, std::vector<float>(1 << 19));
  CheckpointContent content;
  for (size_t t = 0; t < values.size(); ++t) {
    content.tensors.push_back({cat("model/t", t), values[t].size(), {values[t].size()}});
    content.pieces.push_back({t, 0, values[t]});
  }
  for (int64_t step = 1;; ++step) {
    for (auto& tensor : values) std::fill(tensor.begin(), tensor.end(), static_cast<float>(step));
    content.state.step = step;
    save_checkpoint(dir, content, {.layout = step % 2 ? Layout::shared : Layout::per_rank}, 3,
                    MPI_COMM_WORLD);
  }
}

bool has_temporary(const fs::path& folder) {
  std::error_code error;
  for (const auto& item : fs::directory_iterator(folder, error)) {
    if (item.path().extension() == ".tmp") return true;
  }
  return false;
}

TEST(KillDuringSave, PreviousCheckpointSurvivesSigkill) {
  testing::TempDir dir;
  const std::string binary = fs::read_symlink("/proc/self/exe").string();
  const std::string variable = cat(kFolderVariable, "=", dir.path().string());
  std::vector<char*> environment;
  for (char** entry = environ; *entry != nullptr; ++entry) environment.push_back(*entry);
  environment.push_back(const_cast<char*>(variable.c_str()));
  environment.push_back(nullptr);
  std::string filter = "--gtest_filter=KillDuringSave.DISABLED_SavesForeverHelper";
  std::string disabled = "--gtest_also_run_disabled_tests";
  char* arguments[] = {const_cast<char*>(binary.c_str()), filter.data(), disabled.data(), nullptr};
  pid_t child = 0;
  ASSERT_EQ(posix_spawn(&child, binary.c_str(), nullptr, nullptr, arguments, environment.data()),
            0);

  // Wait for two committed saves, then kill during the next one.
  CheckpointDir folder(dir.path());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  bool caught = false;
  while (std::chrono::steady_clock::now() < deadline) {
    if (folder.list().size() >= 2 && has_temporary(dir.path())) {
      caught = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(caught) << "the helper never reached a second save";
  ASSERT_TRUE(WIFSIGNALED(status));

  int argc = 0;
  char** argv = nullptr;
  MpiSession mpi(&argc, &argv);
  const std::optional<fs::path> latest = folder.latest();
  ASSERT_TRUE(latest.has_value());
  for (const auto& entry : folder.list()) {
    CheckpointReader reader(entry.path, MPI_COMM_WORLD);
    EXPECT_TRUE(reader.verify_checksums().empty()) << entry.path;
  }
  // `auto` picks the newest complete checkpoint: latest's, or one committed just before the
  // kill whose `latest` update had not happened yet.
  const std::optional<fs::path> resolved = folder.resolve_auto(MPI_COMM_WORLD);
  ASSERT_TRUE(resolved.has_value());
  EXPECT_GE(CheckpointReader(*resolved, MPI_COMM_WORLD).info().step,
            CheckpointReader(*latest, MPI_COMM_WORLD).info().step);
}

}  // namespace
}  // namespace autotrain::ckpt::kill_during_save_test
