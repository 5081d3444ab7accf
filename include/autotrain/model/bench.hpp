#pragma once
// Training-step benchmark of the CPU model (forward + backward; the optimizer update is the
// optim layer's and is not included). `autotrain bench train` prints these figures.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "autotrain/model/config.hpp"
#include "autotrain/model/gpt2.hpp"

namespace autotrain::model {

struct ModelBenchResult {
  int batch_size = 0;
  int seq_len = 0;
  int threads = 0;
  int steps = 0;
  std::size_t num_parameters = 0;
  std::size_t activation_bytes = 0;
  double step_s = 0;      // mean forward + backward time per micro-step
  double forward_s = 0;   // mean
  double backward_s = 0;  // mean
  double tokens_per_s = 0;
  double flops_per_token = 0;         // 6N + 6·L·C·T
  double gflops_per_s = 0;            // achieved model FLOP/s
  std::vector<ProfileEntry> profile;  // summed over the timed steps (one extra profiled step)
};

// Runs one warm-up step, then `steps` timed steps of forward + backward on random tokens.
ModelBenchResult bench_model_step(const ModelConfig& config, int B, int T, int threads, int steps,
                                  std::uint64_t seed = 1);

}  // namespace autotrain::model
