#include "autotrain/train/bench_train.hpp"

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>

#include "autotrain/comm/communicator.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/memory_usage.hpp"
#include "autotrain/core/timer.hpp"
#include "autotrain/kernels/matmul.hpp"
#include "autotrain/kernels/threads.hpp"
#include "autotrain/model/family.hpp"
#include "autotrain/optim/schedule.hpp"
#include "autotrain/train/lora.hpp"
#include "autotrain/train/replica.hpp"

namespace autotrain::train {
namespace {

// The micro-batches cycle through this many distinct random batches: enough that the loss does
// not collapse onto one batch, few enough to build before the first step.
constexpr int kRandomBatches = 4;
constexpr int kSgemmRepeats = 3;  // best of, per measurement

struct PhaseSeconds {
  double step = 0;
  double forward = 0;
  double backward = 0;
  double optimizer = 0;
  double reduce_tail = 0;  // parts of optimizer
  double grad_norm = 0;
  double comm_wait = 0;
};

template <typename T>
void allreduce_in_place(T* values, int count, MPI_Datatype type, MPI_Op op) {
  AT_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, values, count, type, op, MPI_COMM_WORLD));
}

}  // namespace

TrainBenchResult run_train_bench(const RunSetup& setup, const TrainBenchOptions& options) {
  AT_CHECK(options.steps >= 1, "bench train: --steps ", options.steps, " must be at least 1");
  AT_CHECK(options.warmup_steps >= 0, "bench train: --warmup-steps ", options.warmup_steps,
           " must be 0 or more");
  const auto& params = setup.params();
  const auto& topology = setup.topology;
  kernels::set_num_threads(setup.threads);

  const auto config = model_config(setup.resolved);
  const int B = static_cast<int>(params.batch_size);
  const int T = static_cast<int>(params.block_size);
  const long long accumulation = params.gradient_accumulation;

  // Measured before any model memory exists: its matrices (3·n² floats) are freed again, so the
  // peak resident figure below is the model's whenever the model needs more than they did.
  // On a GPU the peak is the device's datasheet figure for the compute precision instead.
  const bool on_gpu = setup.device == Device::cuda;
  const double peak_before =
      on_gpu ? 0.0 : kernels::measure_sgemm_gflops(options.sgemm_size, kSgemmRepeats);

  auto comm = make_communicator(setup.comm_backend, MPI_COMM_WORLD, comm_options(setup));

  const auto lora = open_lora_model(setup);  // with peft (the base weights from the seed)
  const model::ParamLayout layout = trainable_layout(setup, lora.get());
  const auto replica = make_replica(setup, layout, *comm, B, T, lora.get());
  zero::ModelState* const engine = &replica->state();
  engine->init_parameters(model::RandomInit(static_cast<std::uint64_t>(params.seed)));

  // Every rank draws its own tokens (as its slice of a global batch would differ).
  const std::size_t batch_tokens = static_cast<std::size_t>(B) * static_cast<std::size_t>(T);
  std::mt19937_64 generator(static_cast<std::uint64_t>(params.seed) * 1000003u +
                            static_cast<std::uint64_t>(topology.rank));
  std::uniform_int_distribution<std::int32_t> token(0, config.vocab_size - 1);
  std::vector<std::int32_t> tokens(kRandomBatches * (batch_tokens + 1));
  for (auto& t : tokens) t = token(generator);

  const long long total = options.warmup_steps + options.steps + (options.profile ? 1 : 0);
  const LrSchedule schedule(parse_schedule(params.scheduler, "scheduler"), params.lr, total,
                            params.warmup_ratio);
  std::vector<PhaseSeconds> timed(static_cast<std::size_t>(options.steps));
  long long micro_index = 0;
  float last_loss = 0;

  // One optimizer step, as the trainer runs it (src/train/trainer.cpp).
  auto optimizer_step = [&](long long step, PhaseSeconds& seconds) {
    const Timer step_timer;
    engine->begin_step();
    double loss_sum = 0;
    for (long long micro = 0; micro < accumulation; ++micro, ++micro_index) {
      // Targets are the inputs shifted by one, as in a window of real text.
      const std::int32_t* window =
          tokens.data() +
          static_cast<std::size_t>(micro_index % kRandomBatches) * (batch_tokens + 1);
      engine->begin_micro_step(micro == accumulation - 1);
      // As the trainer: the loss is read after backward is queued (on a GPU both phases are
      // then the host's time to queue them, and the wait for the work lands in the optimizer's).
      const Timer forward_timer;
      replica->set_training_position(step, (micro * comm->size() + comm->rank()) * B);
      replica->forward_async(window, window + 1);
      seconds.forward += forward_timer.seconds();
      const Timer backward_timer;
      replica->backward(1.0f / static_cast<float>(accumulation));
      seconds.backward += backward_timer.seconds();
      loss_sum += replica->last_loss();
    }
    const Timer optimizer_timer;
    engine->finish_backward();
    seconds.reduce_tail = optimizer_timer.seconds();
    const double grad_norm = engine->grad_norm();
    seconds.grad_norm = optimizer_timer.seconds() - seconds.reduce_tail;
    engine->step(static_cast<float>(schedule.lr(step)),
                 clip_factor(grad_norm, params.max_grad_norm));
    seconds.optimizer = optimizer_timer.seconds();
    seconds.comm_wait = engine->take_comm_wait_seconds();
    seconds.step = step_timer.seconds();
    last_loss = static_cast<float>(loss_sum / static_cast<double>(accumulation));
  };

  long long step = 0;
  for (; step < options.warmup_steps; ++step) {
    PhaseSeconds ignored;
    optimizer_step(step, ignored);
  }
  for (auto& seconds : timed) optimizer_step(step++, seconds);
  float final_loss = last_loss;

  TrainBenchResult r;
  if (options.profile) {
    // A separate step, so the per-kernel timers cost the timed steps nothing.
    replica->set_profiling(true);
    PhaseSeconds ignored;
    optimizer_step(step++, ignored);
    r.profile = replica->profile();  // before set_profiling(false), which clears the timers
    replica->set_profiling(false);
  }

  // Read before the sgemm below allocates its matrices. The peak is the better of a measurement
  // before the model existed and one now: on a shared machine either can catch a busy moment,
  // and the MFU should not exceed 100% because the peak was measured in one.
  const auto rss = static_cast<unsigned long long>(peak_resident_bytes());
  double peak_gflops =
      on_gpu
          ? replica->peak_flops_per_s() * 1e-9
          : std::max(peak_before, kernels::measure_sgemm_gflops(options.sgemm_size, kSgemmRepeats));

  // Reductions: each step's time is the slowest rank's; phases the slowest rank's mean.
  std::vector<double> step_seconds(timed.size());
  double phases[6] = {0, 0, 0, 0, 0, 0};
  for (std::size_t i = 0; i < timed.size(); ++i) {
    step_seconds[i] = timed[i].step;
    phases[0] += timed[i].forward;
    phases[1] += timed[i].backward;
    phases[2] += timed[i].optimizer;
    phases[3] += timed[i].comm_wait;
    phases[4] += timed[i].reduce_tail;
    phases[5] += timed[i].grad_norm;
  }
  allreduce_in_place(step_seconds.data(), static_cast<int>(step_seconds.size()), MPI_DOUBLE,
                     MPI_MAX);
  allreduce_in_place(phases, 6, MPI_DOUBLE, MPI_MAX);
  allreduce_in_place(&peak_gflops, 1, MPI_DOUBLE, MPI_SUM);
  allreduce_in_place(&final_loss, 1, MPI_FLOAT, MPI_SUM);
  const auto memory = engine->memory();
  unsigned long long memory_bytes[4] = {memory.param_bytes, memory.grad_bytes,
                                        memory.optimizer_bytes, memory.working_bytes};
  allreduce_in_place(memory_bytes, 4, MPI_UNSIGNED_LONG_LONG, MPI_MAX);
  std::vector<unsigned long long> rss_by_rank(static_cast<std::size_t>(topology.world_size));
  AT_MPI_CHECK(MPI_Allgather(&rss, 1, MPI_UNSIGNED_LONG_LONG, rss_by_rank.data(), 1,
                             MPI_UNSIGNED_LONG_LONG, MPI_COMM_WORLD));

  const double steps = static_cast<double>(options.steps);
  r.world_size = topology.world_size;
  r.threads = setup.threads;
  r.zero_stage = engine->stage();
  r.comm_backend = std::string(comm_backend_name(setup.comm_backend));
  r.batch_size = B;
  r.seq_len = T;
  r.gradient_accumulation = accumulation;
  r.steps = options.steps;
  r.warmup_steps = options.warmup_steps;
  r.num_parameters = layout.num_parameters();
  r.flops_per_token = model::flops_per_token(config, T);
  double sum = 0;
  for (double s : step_seconds) sum += s;
  r.step_mean_s = sum / steps;
  r.step_min_s = *std::min_element(step_seconds.begin(), step_seconds.end());
  r.forward_s = phases[0] / steps;
  r.backward_s = phases[1] / steps;
  r.optimizer_s = phases[2] / steps;
  r.comm_wait_s = phases[3] / steps;
  r.reduce_tail_s = phases[4] / steps;
  r.grad_norm_s = phases[5] / steps;
  const double tokens_per_step =
      static_cast<double>(batch_tokens) * static_cast<double>(accumulation) * topology.world_size;
  r.tokens_per_s = tokens_per_step / r.step_mean_s;
  r.gflops_per_s = r.flops_per_token * r.tokens_per_s * 1e-9;
  r.peak_gflops_per_s = peak_gflops;
  r.mfu = peak_gflops > 0 ? r.gflops_per_s / peak_gflops : 0;
  r.final_loss = static_cast<double>(final_loss) / topology.world_size;
  r.model_state.param_bytes = memory_bytes[0];
  r.model_state.grad_bytes = memory_bytes[1];
  r.model_state.optimizer_bytes = memory_bytes[2];
  r.model_state.working_bytes = memory_bytes[3];
  r.activation_bytes = replica->activation_bytes();
  r.frozen_bytes = replica->frozen_bytes();
  r.device = replica->device();
  r.precision = replica->precision();
  auto device_bytes = static_cast<unsigned long long>(replica->device_memory_bytes());
  allreduce_in_place(&device_bytes, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX);
  r.device_memory_bytes = device_bytes;
  r.peak_rss_bytes.assign(rss_by_rank.begin(), rss_by_rank.end());
  return r;
}

}  // namespace autotrain::train
