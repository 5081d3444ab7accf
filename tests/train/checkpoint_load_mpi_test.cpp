// A resume reads from the checkpoint only the part each rank owns, verifies it from the partial
// checksums, and completes what its ZeRO stage replicates by all-gather (src/train/held_state.hpp):
// written by one stage, loaded by another, at np 1..4.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <mpi.h>

#include <fstream>
#include <tuple>

#include "autotrain/comm/communicator.hpp"
#include "autotrain/core/mpi.hpp"
#include "autotrain/model/init.hpp"
#include "autotrain/train/checkpointing.hpp"
#include "autotrain/zero/engine.hpp"
#include "test_support.hpp"

namespace autotrain::train::checkpoint_load_mpi_test {
namespace {
namespace fs = std::filesystem;

// What a checkpoint holds at flat index `index` for state kind `kind` (0 params, 1 exp_avg,
// 2 exp_avg_sq): distinct per kind and position, so a value read into the wrong place shows.
float value_at(int kind, std::size_t index) {
  return static_cast<float>(kind) * 100.0f + static_cast<float>(index % 4096) * 0.125f;
}

float* state_of(const zero::StateRun& run, int kind) {
  return kind == 0 ? run.params : kind == 1 ? run.exp_avg : run.exp_avg_sq;
}

struct Model {
  model::ParamLayout layout{model::ModelConfig::gpt2(2, 2, 32, 16, 256), world_size()};
  std::unique_ptr<Communicator> comm =
      make_communicator(CommBackend::mpi, MPI_COMM_WORLD, CommOptions{});
  std::unique_ptr<zero::Engine> engine;

  explicit Model(int stage) {
    zero::EngineOptions options;
    options.stage = stage;
    engine = zero::Engine::create(layout, *comm, options);
    engine->init_parameters(model::RandomInit(7));
  }
};

// A checkpoint of every kind holding value_at, written from a stage-`stage` engine.
fs::path write_known_checkpoint(const fs::path& dir, int stage) {
  Model writer(stage);
  for (const auto& run : writer.engine->held_runs()) {
    for (int kind = 0; kind < 3; ++kind) {
      float* data = state_of(run, kind);
      if (data == nullptr) continue;
      for (std::size_t i = run.begin; i < run.end; ++i) data[i - run.begin] = value_at(kind, i);
    }
  }
  writer.engine->after_load();
  const fs::path path = dir / "checkpoint-1.h5";
  ckpt::write_checkpoint(path, checkpoint_content(*writer.engine, writer.layout, {}, {}), {},
                         MPI_COMM_WORLD);
  return path;
}

class CheckpointLoad : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(CheckpointLoad, EachRankReadsOnlyItsPartAndHoldsWhatItsStageKeeps) {
  const auto [written_stage, loaded_stage] = GetParam();
  const testing::SharedTempDir dir;
  const fs::path path = write_known_checkpoint(dir.path(), written_stage);
  Model reader_model(loaded_stage);
  ckpt::CheckpointReader reader(path, MPI_COMM_WORLD);
  const auto problems = load_engine_state(reader, *reader_model.engine, reader_model.layout,
                                          OptimizerKind::adamw, true, *reader_model.comm);
  EXPECT_TRUE(problems.empty()) << problems.front();
  // Its own part of three kinds, whatever the stage keeps.
  uint64_t own_elements = 0;
  for (const auto& run : reader_model.engine->shard_runs()) own_elements += run.end - run.begin;
  EXPECT_EQ(reader.bytes_read(), own_elements * 3 * sizeof(float));
  for (const auto& run : reader_model.engine->held_runs()) {
    for (int kind = 0; kind < 3; ++kind) {
      const float* data = state_of(run, kind);
      if (data == nullptr) continue;
      for (std::size_t i = run.begin; i < run.end; ++i) {
        ASSERT_EQ(data[i - run.begin], value_at(kind, i)) << "kind " << kind << " index " << i;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(WrittenAndLoadedStages, CheckpointLoad,
                         ::testing::Values(std::tuple{3, 0}, std::tuple{0, 3}, std::tuple{2, 1}),
                         [](const auto& stages) {
                           return "Stage" + std::to_string(std::get<0>(stages.param)) + "To" +
                                  std::to_string(std::get<1>(stages.param));
                         });

// Flips one bit of element `element` of dataset `name` in the shared checkpoint file.
void flip_bit(const fs::path& file, const std::string& name, uint64_t element) {
  hid_t id = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(id, 0) << file;
  hid_t dataset = H5Dopen2(id, name.c_str(), H5P_DEFAULT);
  ASSERT_GE(dataset, 0) << name;
  const haddr_t offset = H5Dget_offset(dataset);
  H5Dclose(dataset);
  H5Fclose(id);
  std::fstream stream(file, std::ios::in | std::ios::out | std::ios::binary);
  const auto at = static_cast<std::streamoff>(offset + element * sizeof(float) + 1);
  stream.seekg(at);
  char byte = 0;
  stream.read(&byte, 1);
  byte = static_cast<char>(byte ^ 0x04);
  stream.seekp(at);
  stream.write(&byte, 1);
}

TEST(CheckpointLoadErrors, AFlippedBitInRankOnesPartFailsTheLoadNamingTheDataset) {
  const testing::SharedTempDir dir;
  const fs::path path = write_known_checkpoint(dir.path(), 3);
  Model loaded(0);
  // The first element of rank 1's part of the last unit (rank 0's on one rank), in the
  // tensor that holds it.
  const auto& layout = loaded.layout;
  const int unit = layout.num_units() - 1;
  const std::size_t index = layout.shard(unit, std::min(1, world_size() - 1)).offset;
  const model::ParamTensor* tensor = nullptr;
  for (const auto& t : layout.tensors()) {
    if (index >= t.offset && index < t.offset + t.numel) tensor = &t;
  }
  ASSERT_NE(tensor, nullptr);
  const std::string name = "optimizer/exp_avg/" + tensor->name;
  if (world_rank() == 0) flip_bit(path, name, index - tensor->offset);
  MPI_Barrier(MPI_COMM_WORLD);
  ckpt::CheckpointReader reader(path, MPI_COMM_WORLD);
  const auto problems =
      load_engine_state(reader, *loaded.engine, layout, OptimizerKind::adamw, true, *loaded.comm);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_TRUE(problems[0].starts_with(name + ": checksum mismatch")) << problems[0];
}

}  // namespace
}  // namespace autotrain::train::checkpoint_load_mpi_test
