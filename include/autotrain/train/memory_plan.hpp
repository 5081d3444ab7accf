#pragma once
// The memory a rank needs for training, before anything is allocated: the training state as
// ZeRO partitions it (and, with offload, where it sits: the device, pinned host memory or NVMe),
// plus the activations, which grow with the micro-batch B (each of the B sequences of block_size
// tokens keeps the same activations). auto_find_batch_size (batch_size_finder.hpp) asks it for
// each candidate B; --dry-run prints it with the largest model each offload setting would hold;
// the trainer's start-up line ("ZeRO stage N holds per rank: ...") reports what was allocated.
#include <cstdint>
#include <string>

#include "autotrain/train/run_setup.hpp"

namespace autotrain::train {

// Bytes per parameter of one rank's training state, by where it sits.
struct StateBytes {
  double device = 0;  // where the model computes: the GPU, or host memory on a CPU run
  double host = 0;    // offloaded to pinned host memory
  double nvme = 0;    // offloaded to NVMe
};

struct MemoryPlan {
  double parameters = 0;     // the model's parameters (the base model's with peft)
  double state_bytes = 0;    // parameters, gradients and optimizer state per rank, on the device
  double host_bytes = 0;     // offloaded to host memory per rank
  double nvme_bytes = 0;     // offloaded to NVMe per rank
  double working_bytes = 0;  // a reduce bucket; on the GPU also cuBLAS and the model's fixed part
  double sequence_bytes =
      0;  // activations of one sample: a sequence of block_size tokens (a pair: two)

  // Per rank at micro-batch `batch_size`, on the device.
  double bytes(int64_t batch_size) const {
    return state_bytes + working_bytes + static_cast<double>(batch_size) * sequence_bytes;
  }
  // "state 1.2 GiB + working 64.0 MiB + 8 x 120.0 MiB of activations = 2.2 GiB", then
  // "; offloaded: host 3.0 GiB" where anything is.
  std::string describe(int64_t batch_size) const;
};

// The plan of `setup`'s model on its device, ZeRO stage, offload and world size. The activations
// per sequence are those of the family's CPU model at B = 1 (fp32, exactly proportional to B), or
// on a GPU those its device model allocates in the run's precision on the attention path it will
// take (computed on the host, no device needed: model::gpu::planned_activation_bytes), the part
// that does not grow with B counted in working_bytes.
MemoryPlan memory_plan(const RunSetup& setup);

// The state bytes per parameter of `setup` with its offload settings replaced by these.
StateBytes state_bytes_per_parameter(const RunSetup& setup, const std::string& offload_optimizer,
                                     const std::string& offload_param);

// --dry-run's memory lines: the plan at the run's micro-batch against this rank's device (and
// host) memory, and the most parameters each offload setting fits at the run's stage.
std::string describe_memory_fit(const RunSetup& setup);

}  // namespace autotrain::train
