#pragma once
// `autotrain bench train`: N real optimizer steps of the run a config describes (the same ZeRO
// engine, model and optimizer calls as the trainer, on seeded random tokens so no data has to be
// prepared), timed and split into forward / backward / optimizer, with the communication wait,
// the achieved FLOP rate, the MFU against an sgemm peak measured on the spot, and the memory each
// rank holds. Figures from all ranks are reduced so rank 0 can print them.
#include <cstddef>
#include <vector>

#include "autotrain/model/profile.hpp"
#include "autotrain/train/run_setup.hpp"
#include "autotrain/zero/engine.hpp"

namespace autotrain::train {

struct TrainBenchOptions {
  long long steps = 10;        // timed optimizer steps
  long long warmup_steps = 2;  // untimed steps first (page faults, thread pools, BLAS buffers)
  bool profile = true;         // one extra step with the model's per-kernel timers on
  int sgemm_size = 2048;       // n of the n×n×n sgemm whose GFLOP/s is the peak for the MFU
};

struct TrainBenchResult {
  int world_size = 0;
  int threads = 0;  // per rank
  int zero_stage = 0;
  std::string comm_backend;
  int batch_size = 0;  // per rank and micro-step
  int seq_len = 0;
  long long gradient_accumulation = 0;
  long long steps = 0;
  long long warmup_steps = 0;
  std::size_t num_parameters = 0;
  double flops_per_token = 0;  // the family's count (GPT-2: 6N + 6·L·C·T)

  // Per optimizer step; a step's time is the slowest rank's. The phases are means over the
  // timed steps of the slowest rank per phase; comm_wait_s is the part of them spent blocked on
  // communication (it overlaps the phases, it is not a fourth one).
  double step_mean_s = 0;
  double step_min_s = 0;
  double forward_s = 0;
  double backward_s = 0;
  double optimizer_s = 0;    // finish_backward + grad_norm + step (the reductions' tail included)
  double reduce_tail_s = 0;  // of which finish_backward: waiting for the last reductions
  double grad_norm_s = 0;    // of which grad_norm (its allgather included); the rest is the update
  double comm_wait_s = 0;
  double tokens_per_s = 0;       // all ranks: B·T·accumulation·world_size / step_mean_s
  double gflops_per_s = 0;       // all ranks: flops_per_token · tokens_per_s
  double peak_gflops_per_s = 0;  // all ranks: sum of each rank's measured sgemm GFLOP/s
  double mfu = 0;                // gflops_per_s / peak_gflops_per_s
  double final_loss = 0;         // of the last timed step, mean over ranks

  zero::MemoryReport model_state;  // per rank, the largest of each kind over ranks
  std::size_t activation_bytes = 0;
  std::string recompute;  // activation checkpointing's mode: "full", "selective" or "none"
  // With peft: the frozen base weights and LoRA's scratch per rank (model::LoraAccess); else 0.
  std::size_t frozen_bytes = 0;
  // LoRA's frozen base weights alone (whole, its shard, or its 4- or 8-bit payload), before the
  // first step allocated the units' scratch.
  std::size_t frozen_weight_bytes = 0;
  std::string device;                        // rank 0's: "cpu" or "cuda:0 (NVIDIA H200)"
  std::string precision;                     // compute precision: "fp32", "bf16", "fp16"
  std::size_t device_memory_bytes = 0;       // GPU memory per rank (largest over ranks); 0 on CPUs
  std::vector<std::size_t> peak_rss_bytes;   // per rank (VmHWM), index = rank
  std::vector<model::ProfileEntry> profile;  // this rank's profiled step (empty if not profiled)
};

// Collective over MPI_COMM_WORLD: builds the communicator, engine and model of `setup`, runs
// warmup_steps + steps optimizer steps and the profiled step, and reduces the figures (every
// rank gets the same result). Throws Error for steps < 1 or warmup_steps < 0.
TrainBenchResult run_train_bench(const RunSetup& setup, const TrainBenchOptions& options);

}  // namespace autotrain::train
