#include "autotrain/model/bench.hpp"

#include <random>

#include "autotrain/core/timer.hpp"
#include "autotrain/kernels/threads.hpp"
#include "autotrain/model/init.hpp"
#include "autotrain/model/param_layout.hpp"

namespace autotrain::model {

ModelBenchResult bench_model_step(const ModelConfig& config, int B, int T, int threads, int steps,
                                  std::uint64_t seed) {
  kernels::set_num_threads(threads);
  const ParamLayout layout(config);
  std::vector<float> params(layout.padded_size()), grads(layout.padded_size(), 0.0f);
  init_params(layout, seed, params);
  FlatUnitAccess access(layout, params.data(), grads.data());
  Gpt2Model model(layout, B, T);

  std::mt19937 gen(static_cast<std::uint32_t>(seed));
  std::uniform_int_distribution<int> token(0, config.vocab_size - 1);
  std::vector<std::int32_t> inputs(static_cast<std::size_t>(B) * T), targets(inputs.size());
  for (auto& t : inputs) t = token(gen);
  for (auto& t : targets) t = token(gen);

  model.forward(access, inputs.data(), targets.data());  // warm-up: page faults, thread pools
  model.backward(access, 1.0f);

  ModelBenchResult r;
  r.batch_size = B;
  r.seq_len = T;
  r.threads = threads;
  r.steps = steps;
  r.num_parameters = layout.num_parameters();
  r.activation_bytes = model.activation_bytes();
  for (int s = 0; s < steps; ++s) {
    Timer timer;
    model.forward(access, inputs.data(), targets.data());
    r.forward_s += timer.seconds();
    Timer backward;
    model.backward(access, 1.0f);
    r.backward_s += backward.seconds();
  }
  r.forward_s /= steps;
  r.backward_s /= steps;
  r.step_s = r.forward_s + r.backward_s;
  r.tokens_per_s = static_cast<double>(B) * T / r.step_s;
  r.flops_per_token = flops_per_token(config, T);
  r.gflops_per_s = r.flops_per_token * r.tokens_per_s * 1e-9;

  model.set_profiling(true);  // a separate step, so the timers cost nothing above
  model.forward(access, inputs.data(), targets.data());
  model.backward(access, 1.0f);
  r.profile = model.profile();
  return r;
}

}  // namespace autotrain::model
