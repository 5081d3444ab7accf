// Benchmark driver (not a test), run under mpirun: training steps of a GPT-2 on random tokens
// through a ZeRO engine, printing per-rank model-state memory (the engine's report and the
// measured growth of peak resident memory when the engine is created and trained), tokens/s
// and the fraction of step time spent waiting on communication.
// Usage: bench_zero stage [n_layer n_head n_embd T vocab B steps threads prefetch bucket backend]
#include <mpi.h>
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "autotrain/comm/communicator.hpp"
#include "autotrain/core/mpi.hpp"
#include "autotrain/core/timer.hpp"
#include "autotrain/kernels/threads.hpp"
#include "autotrain/model/gpt2.hpp"
#include "autotrain/optim/schedule.hpp"
#include "autotrain/zero/engine.hpp"

namespace {

double peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // Linux: KiB
}

}  // namespace

int main(int argc, char** argv) {
  using namespace autotrain;
  MpiSession mpi(&argc, &argv);
  auto arg = [&](int i, long fallback) { return argc > i ? std::atol(argv[i]) : fallback; };
  const int stage = static_cast<int>(arg(1, 0));
  const model::ModelConfig config = model::ModelConfig::gpt2(
      static_cast<int>(arg(2, 4)), static_cast<int>(arg(3, 4)), static_cast<int>(arg(4, 256)),
      static_cast<int>(arg(5, 256)), static_cast<int>(arg(6, 50257)));
  const int B = static_cast<int>(arg(7, 8)), steps = static_cast<int>(arg(8, 5));
  kernels::set_num_threads(static_cast<int>(arg(9, 1)));
  zero::EngineOptions options;
  options.stage = stage;
  options.prefetch = static_cast<int>(arg(10, 1));
  options.reduce_bucket_size = static_cast<std::size_t>(arg(11, 1L << 24));
  const std::string backend = argc > 12 ? argv[12] : "mpi";
  auto comm = make_communicator(backend == "gloo" ? CommBackend::gloo : CommBackend::mpi,
                                MPI_COMM_WORLD, CommOptions{});
  const int T = config.block_size;
  const model::ParamLayout layout(config, comm->size());
  model::Gpt2Model model(layout, B, T);
  std::vector<std::int32_t> tokens(static_cast<std::size_t>(B * T + 1));
  std::mt19937 gen(static_cast<unsigned>(comm->rank()));
  std::uniform_int_distribution<int> pick(0, config.vocab_size - 1);
  for (auto& t : tokens) t = pick(gen);
  // Everything but model state exists now (activations, communicator): the growth of peak RSS
  // from here on is what the engine holds.
  const double baseline = peak_rss_mib();
  auto engine = zero::Engine::create(layout, *comm, options);
  engine->init_parameters(model::RandomInit(42));
  double step_seconds = 0, wait_seconds = 0;
  for (int step = 0; step <= steps; ++step) {  // step 0 warms up and is not timed
    comm->barrier();
    engine->take_comm_wait_seconds();
    const Timer timer;
    engine->begin_step();
    engine->begin_micro_step(true);
    model.forward(*engine, tokens.data(), tokens.data() + 1);
    model.backward(*engine, 1.0f);
    engine->finish_backward();
    engine->step(1e-4f, clip_factor(engine->grad_norm(), 1.0));
    if (step > 0) {
      step_seconds += timer.seconds();
      wait_seconds += engine->take_comm_wait_seconds();
    }
  }
  const double grown = peak_rss_mib() - baseline;
  const zero::MemoryReport memory = engine->memory();
  const double tokens_per_s =
      static_cast<double>(steps) * B * T * comm->size() / (step_seconds > 0 ? step_seconds : 1);
  const double mib = 1.0 / (1 << 20);
  double row[7] = {static_cast<double>(memory.param_bytes) * mib,
                   static_cast<double>(memory.grad_bytes) * mib,
                   static_cast<double>(memory.optimizer_bytes) * mib,
                   static_cast<double>(memory.working_bytes) * mib,
                   grown,
                   tokens_per_s,
                   wait_seconds / step_seconds};
  std::vector<double> all(7 * static_cast<std::size_t>(comm->size()));
  MPI_Gather(row, 7, MPI_DOUBLE, all.data(), 7, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  if (comm->rank() == 0) {
    std::printf("stage %d, %s, np %d, %.1fM params, B %d, T %d, prefetch %d, bucket %zu\n", stage,
                backend.c_str(), comm->size(), static_cast<double>(layout.num_parameters()) * 1e-6,
                B, T, options.prefetch, options.reduce_bucket_size);
    std::printf("%4s %12s %12s %12s %12s %12s %12s %10s\n", "rank", "params MiB", "grads MiB",
                "optim MiB", "working MiB", "rss+ MiB", "tokens/s", "comm wait");
    for (int r = 0; r < comm->size(); ++r) {
      const double* v = all.data() + 7 * r;
      std::printf("%4d %12.1f %12.1f %12.1f %12.1f %12.1f %12.0f %9.1f%%\n", r, v[0], v[1], v[2],
                  v[3], v[4], v[5], 100 * v[6]);
    }
  }
  return 0;
}
