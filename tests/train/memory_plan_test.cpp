// The memory plan (--dry-run, auto_find_batch_size) counts the activations that the run's
// recompute mode keeps: none more than selective, selective more than full; on a GPU those of the
// device model.
#include "autotrain/train/memory_plan.hpp"

#include <gtest/gtest.h>

#include <string>

#include "autotrain/config/load.hpp"
#include "autotrain/model/param_layout.hpp"
#ifdef AUTOTRAIN_HAVE_CUDA
#include <cuda_bf16.h>

#include "autotrain/model/gpu/causal_lm.hpp"
#endif

namespace autotrain::train::memory_plan_test {
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

#ifdef AUTOTRAIN_HAVE_CUDA
// On a GPU in bf16 the plan counts what the device model allocates (no device needed): per
// sequence what a second one adds, and what does not grow with the batch (rotary tables, scratch)
// with the working bytes; not the CPU model's fp32 figures.
TEST(MemoryPlan, CountsTheDeviceModelsActivationsOnAGpu) {
  const RunSetup cpu = tiny_setup("selective");
  RunSetup gpu = cpu;
  gpu.device = Device::cuda;
  gpu.precision = Precision::bf16;
  const MemoryPlan on_cpu = memory_plan(cpu);
  const MemoryPlan on_gpu = memory_plan(gpu);
  const model::ParamLayout layout(model_config(gpu.resolved), 1);
  const auto planned = [&](int B) {
    return static_cast<double>(model::gpu::planned_activation_bytes<__nv_bfloat16>(
        layout, B, 64, model::Recompute::selective));
  };
  EXPECT_EQ(on_gpu.sequence_bytes, planned(2) - planned(1));
  EXPECT_NE(on_gpu.sequence_bytes, on_cpu.sequence_bytes);
  EXPECT_EQ(on_gpu.working_bytes,
            on_cpu.working_bytes + 64 * 1024 * 1024 + (2 * planned(1) - planned(2)));
  EXPECT_NEAR(on_gpu.bytes(3) - on_gpu.state_bytes,
              planned(3) + 64 * 1024 * 1024 + on_cpu.working_bytes, 65536)
      << "linear in B up to the allocations' alignment";
}
#endif

}  // namespace
}  // namespace autotrain::train::memory_plan_test
