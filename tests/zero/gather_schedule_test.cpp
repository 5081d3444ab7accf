// The stage-3 gather schedule's prefetch along the model's hook order.
#include "../../src/zero/gather_schedule.hpp"  // internal to the zero layer

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "autotrain/model/family.hpp"

namespace autotrain::zero::gather_schedule_test {
namespace {

// Records the units the schedule asks to gather; the gathers complete at once.
struct Recorder {
  std::vector<int> started;
  GatherSchedule::StartGather start() {
    return [this](std::size_t, int unit) {
      started.push_back(unit);
      return CommHandle();
    };
  }
};

// GPT-2's hook order with `units` units.
model::HookOrder gpt2_order(int units) {
  const auto config = model::ModelConfig::gpt2(units - 2, 1, 16, 8, 64);
  return model::family_of(config).hook_order(config);
}

void forward_pass(GatherSchedule& schedule, int num_units) {
  for (int u = 0; u < num_units; ++u) {
    schedule.acquire(u);
    schedule.release(u);
  }
  schedule.acquire(0);  // the tied LM head
  schedule.release(0);
}

TEST(GatherSchedule, AForwardOnlyPassGathersNothingPastItsEnd) {
  // An evaluation ends with the LM head; what follows may be a save or an optimizer step, so a
  // gather started then would be in flight with nothing waiting on it.
  constexpr int kUnits = 5;
  for (const int prefetch : {1, 2, 4}) {
    SCOPED_TRACE(prefetch);
    WaitClock clock;
    Recorder recorder;
    GatherSchedule schedule(kUnits, gpt2_order(kUnits), prefetch, {}, clock, recorder.start());
    for (int u = 0; u < kUnits; ++u) {
      schedule.acquire(u);
      schedule.release(u);
    }
    const std::size_t before_head = recorder.started.size();
    schedule.acquire(0);
    schedule.release(0);
    for (std::size_t i = before_head; i < recorder.started.size(); ++i) {
      EXPECT_EQ(recorder.started[i], 0)
          << "gathered unit " << recorder.started[i] << " after the last request of the pass";
    }
  }
}

TEST(GatherSchedule, ATrainingMicroStepPrefetchesAlongForwardThenBackward) {
  constexpr int kUnits = 4;
  WaitClock clock;
  Recorder recorder;
  GatherSchedule schedule(kUnits, gpt2_order(kUnits), 1, {}, clock, recorder.start());
  schedule.begin_training_micro_step();
  forward_pass(schedule, kUnits);
  for (int u = kUnits - 1; u >= 1; --u) {  // backward: ln_f and the blocks downwards
    schedule.acquire(u);
    schedule.release(u);
  }
  // Forward 0 1 2 3, the head 0 again (its slot went to 3), backward 3 (still in its slot) 2 1:
  // every unit after the first arrives by prefetch, nothing past the end of the micro-step.
  EXPECT_EQ(recorder.started, (std::vector<int>{0, 1, 2, 3, 0, 2, 1}));
}

TEST(GatherSchedule, EmbeddingsInTheirOwnSlotAreGatheredOncePerMicroStep) {
  constexpr int kUnits = 4;
  WaitClock clock;
  Recorder recorder;
  GatherSchedule schedule(kUnits, gpt2_order(kUnits), 1, /*large_units=*/{0}, clock,
                          recorder.start());
  EXPECT_EQ(schedule.slots(), 3u);  // the embeddings' and prefetch + 1 for the others
  schedule.begin_training_micro_step();
  forward_pass(schedule, kUnits);
  for (int u = kUnits - 1; u >= 1; --u) {
    schedule.acquire(u);
    schedule.release(u);
  }
  // The LM head finds the embeddings still in their slot (no second gather of unit 0), and
  // backward finds units 3 and 2 still in the two others.
  EXPECT_EQ(recorder.started, (std::vector<int>{0, 1, 2, 3, 1}));
}

TEST(GatherSchedule, PlansAnEmbeddingSlotOnlyWhereItSavesMemory) {
  // GPT-2's vocabulary on 2 x 768: the embeddings (39M) dwarf a block (7M).
  const model::ParamLayout narrow(model::ModelConfig::gpt2(2, 12, 768, 1024, 50257), 2);
  const GatherSlots own = plan_gather_slots(narrow, 1);
  EXPECT_EQ(own.large_units, std::vector<int>{0});
  EXPECT_EQ(own.count, 3u);
  const std::size_t embeddings = narrow.units()[0].padded_numel;
  const std::size_t block = narrow.units()[1].padded_numel;
  EXPECT_EQ(own.total(), embeddings + 2 * block);
  EXPECT_LT(own.total(), 2 * embeddings);
  // A small vocabulary: the blocks are the largest units and every slot is shared.
  const model::ParamLayout wide(model::ModelConfig::gpt2(4, 4, 256, 64, 256), 2);
  const GatherSlots shared = plan_gather_slots(wide, 1);
  EXPECT_TRUE(shared.large_units.empty());
  EXPECT_EQ(shared.count, 2u);
  // Without prefetch one shared slot is always the smaller.
  EXPECT_TRUE(plan_gather_slots(narrow, 0).large_units.empty());
}

// A Llama-family shape with a 32000-token vocabulary and an untied head: the embeddings and the
// head (unit L + 1, with the final norm) each dwarf a block.
model::ModelConfig untied_llama(int layers) {
  model::ModelConfig c = model::ModelConfig::gpt2(layers, 8, 512, 256, 32000);
  c.family = model::Family::llama;
  c.architecture = "LlamaForCausalLM";
  c.n_kv_head = 8;
  c.intermediate_size = 1376;
  c.tie_word_embeddings = false;
  return c;
}

TEST(GatherSchedule, TheEmbeddingsAndAnUntiedHeadShareOneSlot) {
  constexpr int kLayers = 4;
  const model::ParamLayout layout(untied_llama(kLayers), 2);
  const auto& units = layout.units();
  const int head = kLayers + 1;
  ASSERT_GT(units[static_cast<std::size_t>(head)].padded_numel, units[1].padded_numel);
  const GatherSlots slots = plan_gather_slots(layout, 1);
  EXPECT_EQ(slots.large_units, (std::vector<int>{0, head}));
  EXPECT_EQ(slots.count, 3u);
  EXPECT_EQ(slots.total(),
            std::max(units[0].padded_numel, units[static_cast<std::size_t>(head)].padded_numel) +
                2 * units[1].padded_numel);

  // Training micro-steps (forward 0 1..L L+1, backward L+1 L..1: the embeddings' backward reads
  // no parameters) and then forward-only passes (an evaluation, generation's tokens) along the
  // family's order, with every prefetch depth: no request finds its slots all in use, and a
  // micro-step gathers the embeddings and the head once each (the head stays from forward to
  // backward).
  for (const int prefetch : {0, 1, 2, 8}) {
    SCOPED_TRACE(prefetch);
    WaitClock clock;
    Recorder recorder;
    GatherSchedule schedule(layout.num_units(), layout.hook_order(), prefetch, {0, head}, clock,
                            recorder.start());
    for (int micro = 0; micro < 2; ++micro) {
      schedule.begin_training_micro_step();
      recorder.started.clear();
      for (const int unit : layout.hook_order().training) {
        schedule.acquire(unit);
        schedule.release(unit);
      }
      EXPECT_EQ(std::count(recorder.started.begin(), recorder.started.end(), 0), 1);
      EXPECT_EQ(std::count(recorder.started.begin(), recorder.started.end(), head), 1);
    }
    for (int pass = 0; pass < 3; ++pass) {
      for (const int unit : layout.hook_order().inference) {
        schedule.acquire(unit);
        schedule.release(unit);
      }
    }
  }
}

}  // namespace
}  // namespace autotrain::zero::gather_schedule_test
