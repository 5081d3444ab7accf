#include "autotrain/train/memory_plan.hpp"

#include <unistd.h>

#include <algorithm>
#include <limits>
#include <vector>

#include "autotrain/core/strings.hpp"
#include "autotrain/launch/device.hpp"
#include "autotrain/model/causal_lm.hpp"
#include "autotrain/model/param_layout.hpp"
#include "autotrain/model/quantized_layout.hpp"
#include "autotrain/optim/optimizer.hpp"
#include "autotrain/train/lora.hpp"
#ifdef AUTOTRAIN_HAVE_CUDA
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "autotrain/model/gpu/causal_lm.hpp"
#endif

namespace autotrain::train {
namespace {

constexpr double kFloat = 4;
constexpr double kMiB = 1 << 20;

// What the engine works in besides the state: a reduce bucket of fp32 gradients (stages 0-1), or
// the gathered unit and its gradients (2-3), bounded by the bucket size.
double working_bytes(const RunSetup& setup, double parameters) {
  const double bucket = static_cast<double>(setup.params().reduce_bucket_size);
  double bytes = 2 * kFloat * std::min(bucket, parameters);
  if (setup.device == Device::cuda) bytes += 64 * kMiB;  // cuBLAS's and cuBLASLt's workspaces
  return bytes;
}

// What the model of `setup` allocates for its activations at T positions: per sequence, and what
// does not grow with the batch (the GPU model's rotary tables and scratch).
struct Activations {
  double per_sequence = 0;
  double fixed = 0;
};

Activations activations(const RunSetup& setup, const model::ParamLayout& layout, int T) {
  const model::Recompute mode = recompute_mode(setup.params());
#ifdef AUTOTRAIN_HAVE_CUDA
  // On a GPU the device model's, in its compute precision, computed on the host.
  const auto device_bytes = [&](int B) -> double {
    switch (setup.precision) {
      case Precision::bf16:
        return static_cast<double>(
            model::gpu::planned_activation_bytes<__nv_bfloat16>(layout, B, T, mode));
      case Precision::fp16:
        return static_cast<double>(
            model::gpu::planned_activation_bytes<__half>(layout, B, T, mode));
      case Precision::fp32:
        break;
    }
    return static_cast<double>(model::gpu::planned_activation_bytes<float>(layout, B, T, mode));
  };
  if (setup.device == Device::cuda) {
    const double one = device_bytes(1);
    const double per_sequence = device_bytes(2) - one;
    return {per_sequence, std::max(0.0, one - per_sequence)};
  }
#endif
  // On the CPU measured on the model itself (fp32), exactly proportional to B.
  return {static_cast<double>(model::make_causal_lm<float>(layout, 1, T, mode)->activation_bytes()),
          0};
}

}  // namespace

// Per parameter over N ranks (zero/engine.cpp, zero/gpu/engine.cpp): the compute parameters (c
// bytes: 4, or 2 in 16 bits on a GPU) whole or 1/N at stage 3; the fp32 master weights (a
// 16-bit GPU model's only) and the optimizer state (AdamW's m and v, 8 bytes; adamw_8bit's 2 and
// 1/256; SGD's momentum, 4) whole at stage 0, else 1/N; the fp32 gradients
// whole at stages 0-1 (stage 1 plus the reduced 1/N), 1/N at 2-3. With peft the parameters are
// frozen weights only (as stage 3 shards them; with quantization their 4- or 8-bit payload).
// offload_optimizer moves master, m and v to the host (nvme: to NVMe; on a CPU run only m and v,
// the parameters being the master weights); offload_param the stage-3 compute shard (LoRA: the
// frozen base's) to the host or NVMe.
StateBytes state_bytes_per_parameter(const RunSetup& setup, const std::string& offload_optimizer,
                                     const std::string& offload_param) {
  const int stage = std::clamp(setup.zero_stage, 0, 3);
  const double N = setup.topology.world_size;
  const bool gpu = setup.device == Device::cuda;
  const double c = gpu && setup.precision != Precision::fp32 ? 2 : kFloat;
  const double params = c * (stage == 3 ? 1 / N : 1);
  StateBytes bytes;
  if (setup.params().peft) {
    bytes.device = params;
    if (const auto quantization = quant_options(setup.params())) {  // QLoRA: the payload's bytes
      const model::ParamLayout base(model_config(setup.resolved), 1);
      const model::QuantizedLayout quantized(base, *quantization,
                                             c == 2 ? DType::bf16 : DType::fp32);
      bytes.device = static_cast<double>(quantized.payload_bytes()) /
                     static_cast<double>(base.num_parameters()) * (stage == 3 ? 1 / N : 1);
    } else if (offload_param != "none" && gpu && stage == 3) {  // the frozen base's shard
      bytes.device = 0;
      (offload_param == "nvme" ? bytes.nvme : bytes.host) = params;
    }
    return bytes;
  }
  const double master = (c == kFloat ? 0 : kFloat) * (stage == 0 ? 1 : 1 / N);
  // AdamW's m and v: 8 bytes; 8-bit: 2 plus the absmaxes (optim/adamw_8bit.hpp).
  const double moments =
      optimizer_state_bytes_per_element(parse_optimizer(setup.params().optimizer, "optimizer")) *
      (stage == 0 ? 1 : 1 / N);
  const double grads = stage <= 1 ? kFloat + (stage == 1 ? kFloat / N : 0) : kFloat / N;
  bytes.device = params + grads;
  double* optimizer_place = offload_optimizer == "cpu" && gpu ? &bytes.host
                            : offload_optimizer == "nvme"     ? &bytes.nvme
                                                              : &bytes.device;
  // Offloaded, a GPU's fp32 model keeps its master weights apart from the compute copy.
  const double offloaded_master = gpu && c == kFloat ? kFloat / N : master;
  *optimizer_place += moments + (optimizer_place == &bytes.device ? master : offloaded_master);
  // ZeRO-Offload copies the shard's fp32 gradients to pinned host memory during backward.
  if (optimizer_place == &bytes.host) bytes.host += kFloat / N;
  if (offload_param != "none" && gpu && stage == 3) {
    bytes.device -= params;
    (offload_param == "nvme" ? bytes.nvme : bytes.host) += params;
  }
  return bytes;
}

std::string MemoryPlan::describe(int64_t batch_size) const {
  std::string text =
      cat("state ", human_bytes(state_bytes), " + working ", human_bytes(working_bytes), " + ",
          batch_size, " x ", human_bytes(sequence_bytes),
          " of activations = ", human_bytes(bytes(batch_size)));
  if (host_bytes > 0) text += cat("; offloaded: host ", human_bytes(host_bytes));
  if (nvme_bytes > 0)
    text += cat(host_bytes > 0 ? ", NVMe " : "; offloaded: NVMe ", human_bytes(nvme_bytes));
  return text;
}

MemoryPlan memory_plan(const RunSetup& setup) {
  const auto& params = setup.params();
  const model::ParamLayout layout(model_config(setup.resolved), setup.topology.world_size);
  MemoryPlan plan;
  plan.parameters = static_cast<double>(layout.num_parameters());
  const StateBytes per_parameter = state_bytes_per_parameter(setup, params.offload_optimizer_device,
                                                             params.offload_param_device);
  plan.state_bytes = plan.parameters * per_parameter.device;
  plan.host_bytes = plan.parameters * per_parameter.host;
  plan.nvme_bytes = plan.parameters * per_parameter.nvme;
  plan.working_bytes = working_bytes(setup, plan.parameters);
  // The model allocates its activations at construction and none after, of what its recompute
  // mode keeps.
  const Activations kept = activations(setup, layout, static_cast<int>(params.block_size));
  plan.sequence_bytes = kept.per_sequence;
  plan.working_bytes += kept.fixed;
  // dpo and orpo: a sample is a pair, two sequences (dpo's reference costs no memory: its
  // log-probabilities are computed once before training).
  const bool pairs =
      params.trainer == "dpo" || params.trainer == "orpo" || params.trainer == "reward";
  if (pairs) plan.sequence_bytes *= 2;
  return plan;
}

namespace {

// The node's memory shared by its ranks (0 = unknown).
double host_memory_per_rank(int node_ranks) {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return 0;
  return static_cast<double>(pages) * static_cast<double>(page) / std::max(1, node_ranks);
}

// "1.2e+09" or "none": the most parameters whose state fits both budgets.
std::string most_parameters(const StateBytes& bytes, double device_left, double host) {
  double most =
      bytes.device > 0 ? device_left / bytes.device : std::numeric_limits<double>::infinity();
  if (bytes.host > 0 && host > 0) most = std::min(most, host / bytes.host);
  if (most < 1) return "none";
  return cat(static_cast<double>(static_cast<long long>(most / 1e6)) / 1e3, "B");
}

}  // namespace

std::string describe_memory_fit(const RunSetup& setup) {
  const MemoryPlan plan = memory_plan(setup);
  const int64_t B = setup.params().batch_size;
  const bool gpu = setup.device == Device::cuda;
  const double host = host_memory_per_rank(setup.node_ranks);
  const double device = gpu ? static_cast<double>(gpu_memory_bytes(setup.topology.device)) : host;
  MemoryPlan on_device = plan;
  on_device.host_bytes = on_device.nvme_bytes = 0;
  const bool pairs = setup.params().trainer == "dpo" || setup.params().trainer == "orpo" ||
                     setup.params().trainer == "reward";
  std::string text =
      cat("  memory       per rank at batch ", B,
          pairs ? " pairs (2 sequences each; "
                  "dpo's reference: none held, its log-probabilities are computed once)"
                : "",
          ": ", on_device.describe(B), " of ", gpu ? "the GPU's " : "the host's ",
          human_bytes(device), plan.describe(B).substr(on_device.describe(B).size()), "\n");
  const double left = device - plan.working_bytes - static_cast<double>(B) * plan.sequence_bytes;
  std::vector<std::string> settings = {
      cat(most_parameters(state_bytes_per_parameter(setup, "none", "none"), left, host),
          " without offload")};
  if (gpu && setup.zero_stage >= 1) {
    settings.push_back(
        cat(most_parameters(state_bytes_per_parameter(setup, "cpu", "none"), left, host),
            " with offload_optimizer_device cpu"));
  }
  if (gpu && setup.zero_stage == 3) {
    settings.push_back(
        cat(most_parameters(state_bytes_per_parameter(setup, "cpu", "cpu"), left, host),
            " with offload_param_device cpu too"));
    settings.push_back(
        cat(most_parameters(state_bytes_per_parameter(setup, "nvme", "nvme"), left, host),
            " with both on nvme (and room under nvme_path)"));
  }
  return text + cat("  fits         the most parameters at ZeRO stage ", setup.zero_stage, " over ",
                    setup.topology.world_size, " rank(s), with this model's activations and ",
                    human_bytes(host), " of host memory per rank: ", join(settings, "; "), "\n");
}

}  // namespace autotrain::train
