// The memory plan (--dry-run, auto_find_batch_size) counts the activations that the run's
// recompute mode keeps: none more than selective, selective more than full.
#include "autotrain/train/memory_plan.hpp"

#include <gtest/gtest.h>

#include <string>

#include "autotrain/config/load.hpp"

namespace autotrain::train {
namespace {

RunSetup tiny_setup(const std::string& recompute, bool disable_gradient_checkpointing = false) {
  RunSetup setup;
  setup.resolved = config::default_params();
  auto& p = setup.resolved.params;
  p.n_layer = 3;
  p.n_head = 2;
  p.n_embd = 32;
  p.n_positions = 64;
  p.block_size = 64;
  p.vocab_size = 97;
  p.reduce_bucket_size = 1000;
  p.recompute = recompute;
  p.disable_gradient_checkpointing = disable_gradient_checkpointing;
  return setup;
}

TEST(MemoryPlan, CountsTheActivationsOfTheRecomputeMode) {
  const double none = memory_plan(tiny_setup("none")).sequence_bytes;
  const double selective = memory_plan(tiny_setup("selective")).sequence_bytes;
  const double full = memory_plan(tiny_setup("full")).sequence_bytes;
  EXPECT_GT(none, selective);
  EXPECT_GT(selective, full);
  // Not yet resolved, recompute follows disable_gradient_checkpointing.
  EXPECT_EQ(memory_plan(tiny_setup("auto")).sequence_bytes, selective);
  EXPECT_EQ(memory_plan(tiny_setup("auto", true)).sequence_bytes, none);
}

}  // namespace
}  // namespace autotrain::train
