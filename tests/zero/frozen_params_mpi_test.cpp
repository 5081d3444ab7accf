// Frozen weights held by the ZeRO engine (Engine::hold_frozen, LoRA's base model): under stage 3
// each rank holds its shard of them and the gather slots, not the whole model, and LoRA trained
// through them (model::LoraAccess between the model and the engine) follows the stage-0 run on
// the same ranks, with adapter dropout too. Every rank trains on the same micro-batch (and draws
// its dropout masks for the same rows), so the averaged gradients are each rank's own and any
// world size must give the same curve. Run under mpirun -np 1..4.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "../../src/zero/gather_schedule.hpp"  // internal to the zero layer: the slots' size
#include "autotrain/comm/communicator.hpp"
#include "autotrain/kernels/threads.hpp"
#include "autotrain/model/causal_lm.hpp"
#include "autotrain/model/lora.hpp"
#include "autotrain/model/lora_access.hpp"
#include "autotrain/model/param_layout.hpp"
#include "autotrain/model/param_source.hpp"
#include "autotrain/model/quantized_layout.hpp"
#include "autotrain/optim/schedule.hpp"
#include "autotrain/zero/engine.hpp"

namespace autotrain::zero::frozen_params_mpi_test {
namespace {

constexpr int kB = 2, kT = 8, kV = 64, kSteps = 3;
constexpr std::uint64_t kSeed = 21;

// A tiny Qwen3-like model (untied LM head, q/k norms) of `layers` blocks. With a `vocabulary`
// of 512 the embeddings and the head are each larger than a block, so under stage 3 they share
// one gather slot (the tokens stay below kV).
model::ModelConfig tiny_llama(int layers, int vocabulary = kV) {
  model::ModelConfig c = model::ModelConfig::gpt2(layers, 4, 32, kT, vocabulary);
  c.family = model::Family::llama;
  c.architecture = "Qwen3ForCausalLM";
  c.n_kv_head = 2;
  c.head_dim = 8;
  c.intermediate_size = 48;
  c.tie_word_embeddings = false;
  c.qk_norm = true;
  return c;
}

std::unique_ptr<Communicator> world_communicator() {
  return make_communicator(CommBackend::mpi, MPI_COMM_WORLD, CommOptions{});
}

model::LoraOptions lora_options(double dropout) {
  model::LoraOptions options{4, 8.0, {"all-linear"}};
  options.dropout = dropout;
  return options;
}

// The layouts of one LoRA run on `world` ranks (train::LoraModel's).
struct Lora {
  model::LoraOptions options;
  model::ParamLayout base;    // world size 1: the model's
  model::ParamLayout frozen;  // padded for the world: what the engine holds
  model::ParamLayout adapters;
  model::LoraAdapters lora;
  Lora(const model::ModelConfig& config, int world, double dropout = 0)
      : options(lora_options(dropout)),
        base(config, 1),
        frozen(config, world),
        adapters(model::lora_layout(base, options, world)),
        lora(base, adapters, options) {}
};

std::unique_ptr<Engine> lora_engine(const Lora& run, Communicator& comm, int stage) {
  EngineOptions options;
  options.stage = stage;
  options.reduce_bucket_size = 500;  // several buckets: reductions in flight beside the gathers
  return Engine::create(run.adapters, comm, options);
}

struct Trained {
  std::vector<float> losses;
  std::vector<float> adapters;  // every unit's, gathered (the same on every rank)
};

// kSteps AdamW steps of the adapters at `stage` over frozen weights from the seed (QLoRA: held
// quantized).
Trained train(const model::ModelConfig& config, Communicator& comm, int stage, double dropout = 0,
              std::optional<model::QuantOptions> quantization = std::nullopt) {
  const Lora run(config, comm.size(), dropout);
  const auto engine = lora_engine(run, comm, stage);
  engine->init_parameters(model::RandomInit(kSeed + 1));
  model::UnitAccess& frozen =
      engine->hold_frozen(run.frozen, model::RandomInit(kSeed), quantization);
  model::LoraAccess access(run.base, frozen, run.lora, run.adapters, *engine);
  const auto lm = model::make_causal_lm<float>(run.base, kB, kT);
  std::mt19937 gen(5);
  std::vector<std::int32_t> inputs(kB * kT), targets(kB * kT);
  Trained trained;
  for (int step = 0; step < kSteps; ++step) {
    for (auto& token : inputs) token = static_cast<std::int32_t>(gen() % kV);
    for (auto& token : targets) token = static_cast<std::int32_t>(gen() % kV);
    engine->begin_step();
    engine->begin_micro_step(true);
    access.train_on(model::DropoutRows{kSeed, static_cast<std::uint64_t>(step), 0});
    trained.losses.push_back(lm->forward(access, inputs.data(), targets.data()));
    lm->backward(access, 1.0f);
    engine->finish_backward();
    engine->step(1e-2f, clip_factor(engine->grad_norm(), 1.0));
  }
  for (int u = 0; u < run.adapters.num_units(); ++u) {
    std::vector<float> unit(run.adapters.units()[static_cast<std::size_t>(u)].numel);
    engine->gather_unit(u, unit, 0);
    comm.broadcast(std::span<float>(unit), 0);
    trained.adapters.insert(trained.adapters.end(), unit.begin(), unit.end());
  }
  return trained;
}

class FrozenParams : public ::testing::Test {
 protected:
  void SetUp() override { kernels::set_num_threads(1); }
};

TEST_F(FrozenParams, LoraAtStage3FollowsStage0OverShardedFrozenWeights) {
  const auto comm = world_communicator();
  for (const auto& [layers, vocabulary] : {std::pair{2, kV}, std::pair{3, kV}, std::pair{2, 512}}) {
    SCOPED_TRACE(vocabulary);
    const Trained stage0 = train(tiny_llama(layers, vocabulary), *comm, 0);
    const Trained stage3 = train(tiny_llama(layers, vocabulary), *comm, 3);
    ASSERT_EQ(stage0.losses.size(), stage3.losses.size());
    for (std::size_t s = 0; s < stage0.losses.size(); ++s) {
      EXPECT_NEAR(stage0.losses[s], stage3.losses[s], 1e-5) << "step " << s;
    }
    EXPECT_GT(stage0.losses.front() - stage0.losses.back(), 0.0f) << "the adapters did not train";
    ASSERT_EQ(stage0.adapters.size(), stage3.adapters.size());
    for (std::size_t i = 0; i < stage0.adapters.size(); ++i) {
      ASSERT_NEAR(stage0.adapters[i], stage3.adapters[i], 1e-5) << "adapter element " << i;
    }
  }
}

TEST_F(FrozenParams, LoraWithDropoutAtStage3FollowsStage0AndStillTrains) {
  const auto comm = world_communicator();
  const Trained without = train(tiny_llama(2), *comm, 0);
  const Trained stage0 = train(tiny_llama(2), *comm, 0, 0.1);
  const Trained stage3 = train(tiny_llama(2), *comm, 3, 0.1);
  for (std::size_t s = 0; s < stage0.losses.size(); ++s) {
    EXPECT_NEAR(stage0.losses[s], stage3.losses[s], 1e-5) << "step " << s;
  }
  for (std::size_t i = 0; i < stage0.adapters.size(); ++i) {
    ASSERT_NEAR(stage0.adapters[i], stage3.adapters[i], 1e-5) << "adapter element " << i;
  }
  // The first step starts from B = 0: the same loss; then dropout's gradients tell.
  EXPECT_EQ(stage0.losses.front(), without.losses.front());
  EXPECT_NE(stage0.losses.back(), without.losses.back());
  EXPECT_NE(stage0.adapters, without.adapters);
  EXPECT_GT(stage0.losses.front() - stage0.losses.back(), 0.0f) << "the adapters did not train";
}

TEST_F(FrozenParams, Stage3HoldsItsShardOfTheFrozenWeightsAndTheGatherSlots) {
  const auto comm = world_communicator();
  const int world = comm->size();
  const Lora run(tiny_llama(8), world);
  const std::size_t whole = run.frozen.padded_size() * sizeof(float);
  const auto stage0 = lora_engine(run, *comm, 0);
  stage0->hold_frozen(run.frozen, model::RandomInit(kSeed));
  EXPECT_EQ(stage0->frozen_bytes(), whole);

  const auto stage3 = lora_engine(run, *comm, 3);  // prefetch 1: two slots
  stage3->hold_frozen(run.frozen, model::RandomInit(kSeed));
  const std::size_t slots = plan_gather_slots(run.frozen, 1).total() * sizeof(float);
  EXPECT_EQ(stage3->frozen_bytes(), whole / static_cast<std::size_t>(world) + slots);
  // The slots hold two of the model's 10 units: well under a third of it.
  EXPECT_LT(slots, whole / 3);
  if (world > 1) {
    EXPECT_LT(stage3->frozen_bytes(), whole / static_cast<std::size_t>(world) + whole / 3);
  }
}

// QLoRA: what the engine's quantized frozen weights give the model, unit by unit, is the base
// quantized and dequantized (model::quantize_round_trip, checked against PyTorch in
// tests/kernels), whole or sharded and gathered, in 4 bits with and without double
// quantization and in 8.
TEST_F(FrozenParams, QuantizedFrozenWeightsAreTheRoundTripAtStages0And3) {
  const auto comm = world_communicator();
  const Lora run(tiny_llama(3), comm->size());
  std::vector<float> whole(run.base.padded_size());
  model::RandomInit(kSeed).fill(run.base, whole, 0);
  const std::size_t full_bytes = run.frozen.padded_size() * sizeof(float);
  using kernels::QuantKind;
  for (const model::QuantOptions q :
       {model::QuantOptions{QuantKind::nf4, false}, model::QuantOptions{QuantKind::nf4, true},
        model::QuantOptions{QuantKind::int8, false}}) {
    std::vector<float> expected = whole;
    model::quantize_round_trip(run.base, q, expected);
    EXPECT_NE(expected, whole);
    for (const int stage : {0, 3}) {
      SCOPED_TRACE(testing::Message()
                   << "kind " << int(q.kind) << " double " << q.double_quant << " stage " << stage);
      const auto engine = lora_engine(run, *comm, stage);
      model::UnitAccess& frozen = engine->hold_frozen(run.frozen, model::RandomInit(kSeed), q);
      for (int u = 0; u < run.base.num_units(); ++u) {
        const auto& unit = run.base.units()[static_cast<std::size_t>(u)];
        const float* values = frozen.params(u);
        for (std::size_t i = 0; i < unit.numel; ++i) {
          ASSERT_EQ(values[i], expected[unit.offset + i]) << "unit " << u << " element " << i;
        }
        frozen.release(u);
      }
      if (stage == 0) {
        EXPECT_LT(engine->frozen_bytes(), full_bytes * 3 / 4);
      }
    }
  }
}

TEST_F(FrozenParams, QloraAtStage3FollowsStage0AndTrains) {
  const auto comm = world_communicator();
  for (const model::QuantOptions q : {model::QuantOptions{kernels::QuantKind::nf4, true},
                                      model::QuantOptions{kernels::QuantKind::int8, false}}) {
    const Trained full = train(tiny_llama(2), *comm, 0);
    const Trained stage0 = train(tiny_llama(2), *comm, 0, 0.1, q);
    const Trained stage3 = train(tiny_llama(2), *comm, 3, 0.1, q);
    for (std::size_t s = 0; s < stage0.losses.size(); ++s) {
      EXPECT_NEAR(stage0.losses[s], stage3.losses[s], 1e-5) << "step " << s;
    }
    for (std::size_t i = 0; i < stage0.adapters.size(); ++i) {
      ASSERT_NEAR(stage0.adapters[i], stage3.adapters[i], 1e-5) << "adapter element " << i;
    }
    EXPECT_NE(stage0.losses.front(), full.losses.front()) << "the weights were not quantized";
    EXPECT_NEAR(stage0.losses.front(), full.losses.front(), 0.05);
    EXPECT_GT(stage0.losses.front() - stage0.losses.back(), 0.0f) << "the adapters did not train";
  }
}

}  // namespace
}  // namespace autotrain::zero::frozen_params_mpi_test
