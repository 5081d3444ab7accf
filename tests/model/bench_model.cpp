// Benchmark driver (not a test): forward + backward of the CPU GPT-2 step and the sgemm peak
// it is measured against. Usage: bench_model [n_layer n_head n_embd block_size vocab B threads
// steps]; defaults are configs/bench-cpu.yaml's shape.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "autotrain/kernels/matmul.hpp"
#include "autotrain/kernels/threads.hpp"
#include "autotrain/model/bench.hpp"

int main(int argc, char** argv) {
  using namespace autotrain;
  auto arg = [&](int i, int fallback) { return argc > i ? std::atoi(argv[i]) : fallback; };
  const model::ModelConfig config =
      model::ModelConfig::gpt2(arg(1, 4), arg(2, 4), arg(3, 256), arg(4, 256), arg(5, 50257));
  const int B = arg(6, 8), threads = arg(7, 2), steps = arg(8, 5);
  kernels::set_num_threads(threads);
  const double peak = kernels::measure_sgemm_gflops(2048, 3);
  const auto r = model::bench_model_step(config, B, config.block_size, threads, steps);
  std::printf("blas threading: %s\n", kernels::blas_threading());
  std::printf("%8s %6s %5s %8s %10s %10s %10s %12s %10s %10s %8s\n", "params", "B", "T", "threads",
              "fwd(ms)", "bwd(ms)", "step(ms)", "tokens/s", "GFLOP/s", "peak", "MFU");
  std::printf("%7.1fM %6d %5d %8d %10.1f %10.1f %10.1f %12.0f %10.1f %10.1f %7.1f%%\n",
              static_cast<double>(r.num_parameters) * 1e-6, r.batch_size, r.seq_len, r.threads,
              r.forward_s * 1e3, r.backward_s * 1e3, r.step_s * 1e3, r.tokens_per_s, r.gflops_per_s,
              peak, 100.0 * r.gflops_per_s / peak);
  std::printf("activations: %.1f MiB\n\n%-14s %10s %10s\n",
              static_cast<double>(r.activation_bytes) / (1 << 20), "kernel", "fwd(ms)", "bwd(ms)");
  for (const auto& p : r.profile) {
    std::printf("%-14s %10.1f %10.1f\n", p.name.c_str(), p.forward_s * 1e3, p.backward_s * 1e3);
  }
  return 0;
}
