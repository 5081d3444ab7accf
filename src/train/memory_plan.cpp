#include "autotrain/train/memory_plan.hpp"

#include <algorithm>

#include "autotrain/core/strings.hpp"
#include "autotrain/model/causal_lm.hpp"
#include "autotrain/model/param_layout.hpp"

namespace autotrain::train {
namespace {

constexpr double kFloat = 4;
constexpr double kMiB = 1 << 20;

// Bytes per parameter of the fp32 training state (weights, gradients, two AdamW moments) per
// rank at each ZeRO stage over N ranks: 0 keeps all, 1 shards the moments, 2 the gradients too,
// 3 everything. With peft the parameters are frozen weights only (as stage 3 shards them).
double state_bytes_per_parameter(int stage, double N, bool frozen) {
  if (frozen) return stage == 3 ? kFloat / N : kFloat;
  const double per_parameter[] = {16, 8 + 8 / N, 4 + 12 / N, 16 / N};
  return per_parameter[std::clamp(stage, 0, 3)];
}

// What the engine works in besides the state: a reduce bucket of fp32 gradients (stages 0-1), or
// the gathered unit and its gradients (2-3), bounded by the bucket size.
double working_bytes(const RunSetup& setup, double parameters) {
  const double bucket = static_cast<double>(setup.params().reduce_bucket_size);
  double bytes = 2 * kFloat * std::min(bucket, parameters);
  if (setup.device == Device::cuda) {
    // The 16-bit compute copies of the weights and gradients, and cuBLAS's and cuBLASLt's
    // workspaces (32 MiB each).
    if (setup.precision != Precision::fp32) bytes += 2 * 2 * parameters;
    bytes += 64 * kMiB;
  }
  return bytes;
}

}  // namespace

std::string MemoryPlan::describe(int64_t batch_size) const {
  return cat("state ", human_bytes(state_bytes), " + working ", human_bytes(working_bytes), " + ",
             batch_size, " x ", human_bytes(sequence_bytes),
             " of activations = ", human_bytes(bytes(batch_size)));
}

MemoryPlan memory_plan(const RunSetup& setup) {
  const auto& params = setup.params();
  const double N = setup.topology.world_size;
  const model::ParamLayout layout(model_config(setup.resolved), setup.topology.world_size);
  MemoryPlan plan;
  plan.parameters = static_cast<double>(layout.num_parameters());
  plan.state_bytes = plan.parameters * state_bytes_per_parameter(setup.zero_stage, N, params.peft);
  plan.working_bytes = working_bytes(setup, plan.parameters);
  // The model allocates its activations at construction and none after: one sequence's worth.
  const auto one_sequence = model::make_causal_lm<float>(
      layout, 1, static_cast<int>(params.block_size), !params.disable_gradient_checkpointing);
  plan.sequence_bytes = static_cast<double>(one_sequence->activation_bytes());
  return plan;
}

}  // namespace autotrain::train
