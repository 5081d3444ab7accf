#pragma once
// The memory a rank needs for training, before anything is allocated: the training state as
// ZeRO partitions it, plus the activations, which grow with the micro-batch B (each of the B
// sequences of block_size tokens keeps the same activations). auto_find_batch_size
// (batch_size_finder.hpp) asks it for each candidate B; the trainer's start-up line ("ZeRO stage
// N holds per rank: ...; activations ...") reports what was then allocated.
#include <cstdint>
#include <string>

#include "autotrain/train/run_setup.hpp"

namespace autotrain::train {

struct MemoryPlan {
  double parameters = 0;      // the model's parameters (the base model's with peft)
  double state_bytes = 0;     // parameters, gradients and optimizer state per rank (fp32)
  double working_bytes = 0;   // a reduce bucket, and on the GPU the 16-bit copies and cuBLAS
  double sequence_bytes = 0;  // activations of one sequence of block_size tokens

  // Per rank at micro-batch `batch_size`.
  double bytes(int64_t batch_size) const {
    return state_bytes + working_bytes + static_cast<double>(batch_size) * sequence_bytes;
  }
  // "state 1.2 GiB + working 64.0 MiB + 8 x 120.0 MiB of activations = 2.2 GiB".
  std::string describe(int64_t batch_size) const;
};

// The plan of `setup`'s model on its device, ZeRO stage and world size. The activations per
// sequence are those of the family's CPU model at B = 1 (fp32; the GPU models keep no more),
// which are exactly proportional to B.
MemoryPlan memory_plan(const RunSetup& setup);

}  // namespace autotrain::train
