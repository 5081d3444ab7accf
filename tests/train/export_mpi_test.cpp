// Export streams a unit at a time to rank 0 from any ZeRO stage and world size, and the folder it
// writes loads back (load_model_folder) to exactly the model that was trained.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "autotrain/comm/communicator.hpp"
#include "autotrain/config/training_params.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/mpi.hpp"
#include "autotrain/model/init.hpp"
#include "autotrain/train/export.hpp"
#include "autotrain/train/generate.hpp"
#include "autotrain/zero/engine.hpp"
#include "test_support.hpp"

namespace autotrain::train::export_mpi_test {
namespace {

class ExportTest : public ::testing::TestWithParam<int> {};

TEST_P(ExportTest, FolderLoadsBackToTheSeedsParametersFromEveryStage) {
  const int stage = GetParam();
  int world = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  const auto shape = model::ModelConfig::gpt2(2, 2, 32, 16, 256);
  const model::ParamLayout layout(shape, world);
  auto comm = make_communicator(CommBackend::mpi, MPI_COMM_WORLD, CommOptions{});
  zero::EngineOptions options;
  options.stage = stage;
  auto engine = zero::Engine::create(layout, *comm, options);
  engine->init_parameters(model::RandomInit(11));

  const testing::SharedTempDir temp;
  const auto dir = temp / "export";
  config::TrainingParams params;
  params.tokenizer = "byte";
  params.export_dtype = "fp32";
  export_model(*engine, layout, params, dir);
  if (world_rank() != 0) return;

  const LoadedModel loaded = load_model_folder(dir);
  const model::ParamLayout single(shape, 1);
  std::vector<float> expected(single.padded_size());
  model::init_params(single, 11, expected);
  ASSERT_EQ(loaded.params.size(), expected.size());
  EXPECT_EQ(loaded.params, expected);
  EXPECT_EQ(loaded.tokenizer->name(), "byte");

  std::ifstream in(dir / "config.json");
  const auto config = nlohmann::json::parse(in);
  EXPECT_EQ(config["model_type"], "gpt2");
  EXPECT_EQ(config["n_layer"], 2);
  EXPECT_EQ(config["n_positions"], 16);
  EXPECT_EQ(config["vocab_size"], 256);
  // The byte tokenizer's end-of-text token is the NUL byte, as in training.
  EXPECT_EQ(config["eos_token_id"], 0);
  EXPECT_EQ(config["bos_token_id"], 0);
}

INSTANTIATE_TEST_SUITE_P(Stages, ExportTest, ::testing::Values(0, 3));

TEST(Export, Bf16WeightsRoundToNearestAndGenerateRuns) {
  int world = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  const auto shape = model::ModelConfig::gpt2(1, 2, 16, 8, 256);
  const model::ParamLayout layout(shape, world);
  auto comm = make_communicator(CommBackend::mpi, MPI_COMM_WORLD, CommOptions{});
  auto engine = zero::Engine::create(layout, *comm, zero::EngineOptions{});
  engine->init_parameters(model::RandomInit(5));
  const testing::SharedTempDir temp;
  const auto dir = temp / "bf16";
  config::TrainingParams params;
  params.tokenizer = "byte";
  params.export_dtype = "bf16";
  export_model(*engine, layout, params, dir);
  if (world_rank() != 0) return;

  const LoadedModel loaded = load_model_folder(dir);
  const model::ParamLayout single(shape, 1);
  std::vector<float> expected(single.padded_size());
  model::init_params(single, 5, expected);
  for (size_t i = 0; i < expected.size(); ++i) {
    ASSERT_EQ(loaded.params[i], bf16_to_float(float_to_bf16(expected[i]))) << i;
  }
  GenerateOptions options;
  options.prompt = "abc";
  options.max_new_tokens = 5;
  options.temperature = 0;  // greedy: deterministic
  EXPECT_EQ(generate_text(loaded, options), generate_text(loaded, options));
}

TEST(Generate, MissingConfigNamesTheFile) {
  if (world_rank() != 0) return;
  testing::TempDir temp;
  try {
    load_model_folder(temp.path());
    FAIL() << "loaded a folder without config.json";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("config.json"), std::string::npos);
  }
}

}  // namespace
}  // namespace autotrain::train::export_mpi_test
