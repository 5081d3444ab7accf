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
#include "gradient_step.hpp"

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

// kRandomBatches batches of B·T + 1 tokens (the targets are the inputs shifted by one). Every
// rank draws its own (as its slice of a global batch would differ).
std::vector<std::int32_t> random_batches(std::uint64_t seed, int rank, int vocab_size,
                                         std::size_t batch_tokens) {
  std::mt19937_64 generator(seed * 1000003u + static_cast<std::uint64_t>(rank));
  std::uniform_int_distribution<std::int32_t> token(0, vocab_size - 1);
  std::vector<std::int32_t> tokens(kRandomBatches * (batch_tokens + 1));
  for (auto& t : tokens) t = token(generator);
  return tokens;
}

// The optimizer steps of the benchmark: the replica, its engine and the random batches they
// train on, each step as the trainer runs it (src/train/trainer.cpp), timed by phase.
class BenchSteps {
 public:
  BenchSteps(const RunSetup& setup, Replica& replica, const Communicator& comm, int vocab_size,
             long long total)
      : params_(setup.params()),
        replica_(replica),
        engine_(replica.state()),
        B_(static_cast<int>(params_.batch_size)),
        batch_tokens_(static_cast<std::size_t>(B_) * static_cast<std::size_t>(params_.block_size)),
        accumulation_(params_.gradient_accumulation),
        comm_(comm),
        schedule_(lr_schedule(params_, total)),
        tokens_(random_batches(static_cast<std::uint64_t>(params_.seed), setup.topology.rank,
                               vocab_size, batch_tokens_)) {}

  // One optimizer step: the trainer's passes (gradient_step.hpp; on a GPU forward and backward
  // are the host's time to queue the work, and the wait for it lands in the optimizer's phase),
  // then the update.
  void run(long long step, PhaseSeconds& seconds) {
    const Timer step_timer;
    PassSeconds passes;
    const AccumulatedGradients gradients = accumulate_gradients(
        replica_, comm_, step, accumulation_, B_, [&](long long) { return next_batch(); }, &passes);
    const Timer update_timer;
    engine_.step(static_cast<float>(schedule_.lr(step)),
                 clip_factor(gradients.grad_norm, params_.max_grad_norm));
    seconds.forward += passes.forward;
    seconds.backward += passes.backward;
    seconds.reduce_tail = passes.reduce_tail;
    seconds.grad_norm = passes.grad_norm;
    seconds.optimizer = passes.reduce_tail + passes.grad_norm + update_timer.seconds();
    seconds.comm_wait = engine_.take_comm_wait_seconds();
    seconds.step = step_timer.seconds();
    last_loss_ = static_cast<float>(gradients.loss_sum / static_cast<double>(accumulation_));
  }
  float last_loss() const { return last_loss_; }
  std::size_t batch_tokens() const { return batch_tokens_; }

 private:
  // The micro-batches cycle through the random batches; the targets are the inputs shifted by
  // one, as in a window of real text.
  MicroBatch next_batch() {
    const std::int32_t* window =
        tokens_.data() +
        static_cast<std::size_t>(micro_index_++ % kRandomBatches) * (batch_tokens_ + 1);
    return {window, window + 1, 1.0f / static_cast<float>(accumulation_), 1.0};
  }

  const config::TrainingParams& params_;
  Replica& replica_;
  zero::ModelState& engine_;
  const int B_;
  const std::size_t batch_tokens_;
  const long long accumulation_;
  const Communicator& comm_;
  const LrSchedule schedule_;
  const std::vector<std::int32_t> tokens_;
  long long micro_index_ = 0;
  float last_loss_ = 0;
};

// The warm-up steps, the timed steps (their times; `final_loss`: the last one's) and, with
// options.profile, one more with the per-kernel timers (`profile`), so that they cost the timed
// steps nothing.
std::vector<PhaseSeconds> run_steps(BenchSteps& steps, Replica& replica,
                                    const TrainBenchOptions& options, float& final_loss,
                                    std::vector<model::ProfileEntry>& profile) {
  std::vector<PhaseSeconds> timed(static_cast<std::size_t>(options.steps));
  long long step = 0;
  for (; step < options.warmup_steps; ++step) {
    PhaseSeconds ignored;
    steps.run(step, ignored);
  }
  for (auto& seconds : timed) steps.run(step++, seconds);
  final_loss = steps.last_loss();
  if (options.profile) {
    replica.set_profiling(true);
    PhaseSeconds ignored;
    steps.run(step++, ignored);
    profile = replica.profile();  // before set_profiling(false), which clears the timers
    replica.set_profiling(false);
  }
  return timed;
}

// The timed steps' figures over the ranks: each step's time is the slowest rank's, each phase
// the slowest rank's sum; the sgemm peaks and the final losses are summed.
struct RankFigures {
  std::vector<double> step_seconds;
  double forward = 0, backward = 0, optimizer = 0, comm_wait = 0, reduce_tail = 0, grad_norm = 0;
  double peak_gflops = 0;
  float final_loss = 0;
  zero::MemoryReport memory;             // the largest of each kind
  std::vector<unsigned long long> rss;   // per rank
  unsigned long long device_memory = 0;  // the largest
};

RankFigures reduce_figures(const std::vector<PhaseSeconds>& timed, const Replica& replica,
                           zero::ModelState& engine, double peak_gflops, float final_loss,
                           unsigned long long rss, int world_size) {
  RankFigures figures;
  figures.step_seconds.resize(timed.size());
  double phases[6] = {0, 0, 0, 0, 0, 0};
  for (std::size_t i = 0; i < timed.size(); ++i) {
    figures.step_seconds[i] = timed[i].step;
    phases[0] += timed[i].forward;
    phases[1] += timed[i].backward;
    phases[2] += timed[i].optimizer;
    phases[3] += timed[i].comm_wait;
    phases[4] += timed[i].reduce_tail;
    phases[5] += timed[i].grad_norm;
  }
  allreduce_in_place(figures.step_seconds.data(), static_cast<int>(figures.step_seconds.size()),
                     MPI_DOUBLE, MPI_MAX);
  allreduce_in_place(phases, 6, MPI_DOUBLE, MPI_MAX);
  allreduce_in_place(&peak_gflops, 1, MPI_DOUBLE, MPI_SUM);
  allreduce_in_place(&final_loss, 1, MPI_FLOAT, MPI_SUM);
  const auto memory = engine.memory();
  unsigned long long memory_bytes[6] = {memory.param_bytes,     memory.grad_bytes,
                                        memory.optimizer_bytes, memory.working_bytes,
                                        memory.host_bytes,      memory.nvme_bytes};
  allreduce_in_place(memory_bytes, 6, MPI_UNSIGNED_LONG_LONG, MPI_MAX);
  figures.rss.resize(static_cast<std::size_t>(world_size));
  AT_MPI_CHECK(MPI_Allgather(&rss, 1, MPI_UNSIGNED_LONG_LONG, figures.rss.data(), 1,
                             MPI_UNSIGNED_LONG_LONG, MPI_COMM_WORLD));
  figures.forward = phases[0];
  figures.backward = phases[1];
  figures.optimizer = phases[2];
  figures.comm_wait = phases[3];
  figures.reduce_tail = phases[4];
  figures.grad_norm = phases[5];
  figures.peak_gflops = peak_gflops;
  figures.final_loss = final_loss;
  figures.memory.param_bytes = memory_bytes[0];
  figures.memory.grad_bytes = memory_bytes[1];
  figures.memory.optimizer_bytes = memory_bytes[2];
  figures.memory.working_bytes = memory_bytes[3];
  figures.memory.host_bytes = memory_bytes[4];
  figures.memory.nvme_bytes = memory_bytes[5];
  figures.device_memory = static_cast<unsigned long long>(replica.device_memory_bytes());
  allreduce_in_place(&figures.device_memory, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX);
  return figures;
}

// The timings as means per timed step, and the rates they give.
void set_timings(TrainBenchResult& r, const RankFigures& figures, const TrainBenchOptions& options,
                 double tokens_per_step) {
  const double steps = static_cast<double>(options.steps);
  double sum = 0;
  for (double s : figures.step_seconds) sum += s;
  r.step_mean_s = sum / steps;
  r.step_min_s = *std::min_element(figures.step_seconds.begin(), figures.step_seconds.end());
  r.forward_s = figures.forward / steps;
  r.backward_s = figures.backward / steps;
  r.optimizer_s = figures.optimizer / steps;
  r.comm_wait_s = figures.comm_wait / steps;
  r.reduce_tail_s = figures.reduce_tail / steps;
  r.grad_norm_s = figures.grad_norm / steps;
  r.tokens_per_s = tokens_per_step / r.step_mean_s;
  r.gflops_per_s = r.flops_per_token * r.tokens_per_s * 1e-9;
  r.peak_gflops_per_s = figures.peak_gflops;
  r.mfu = figures.peak_gflops > 0 ? r.gflops_per_s / figures.peak_gflops : 0;
}

// What was run: the job, the model and the steps.
void describe_run(TrainBenchResult& r, const RunSetup& setup, const TrainBenchOptions& options,
                  const model::ModelConfig& config, const model::ParamLayout& layout,
                  const zero::ModelState& engine) {
  const auto& params = setup.params();
  r.world_size = setup.topology.world_size;
  r.threads = setup.threads;
  r.zero_stage = engine.stage();
  r.comm_backend = std::string(comm_backend_name(setup.comm_backend));
  r.batch_size = static_cast<int>(params.batch_size);
  r.seq_len = static_cast<int>(params.block_size);
  r.gradient_accumulation = params.gradient_accumulation;
  r.steps = options.steps;
  r.warmup_steps = options.warmup_steps;
  r.num_parameters = layout.num_parameters();
  r.flops_per_token = model::flops_per_token(config, r.seq_len);
  r.recompute = model::recompute_name(recompute_mode(params));
}

// The memory each rank holds, and where the model ran.
void set_memory(TrainBenchResult& r, const RankFigures& figures, const Replica& replica) {
  r.model_state = figures.memory;
  r.activation_bytes = replica.activation_bytes();
  r.frozen_bytes = replica.frozen_bytes();
  r.device = replica.device();
  r.precision = replica.precision();
  r.device_memory_bytes = figures.device_memory;
  r.peak_rss_bytes.assign(figures.rss.begin(), figures.rss.end());
}

}  // namespace

TrainBenchResult run_train_bench(const RunSetup& setup, const TrainBenchOptions& options) {
  AT_CHECK(options.steps >= 1, "bench train: --steps ", options.steps, " must be at least 1");
  AT_CHECK(options.warmup_steps >= 0, "bench train: --warmup-steps ", options.warmup_steps,
           " must be 0 or more");
  kernels::set_num_threads(setup.threads);
  const auto& params = setup.params();
  const auto config = model_config(setup.resolved);

  // Measured before any model memory exists: its matrices (3·n² floats) are freed again, so the
  // peak resident figure below is the model's whenever the model needs more than they did.
  // On a GPU the peak is the device's datasheet figure for the compute precision instead.
  const bool on_gpu = setup.device == Device::cuda;
  const double peak_before =
      on_gpu ? 0.0 : kernels::measure_sgemm_gflops(options.sgemm_size, kSgemmRepeats);

  auto comm = make_communicator(setup.comm_backend, MPI_COMM_WORLD, comm_options(setup));
  const auto lora = open_lora_model(setup);  // with peft (the base weights from the seed)
  const model::ParamLayout layout = trainable_layout(setup, lora.get());
  const auto replica = make_replica(setup, layout, *comm, static_cast<int>(params.batch_size),
                                    static_cast<int>(params.block_size), lora.get());
  zero::ModelState& engine = replica->state();
  engine.init_parameters(model::RandomInit(static_cast<std::uint64_t>(params.seed)));

  const long long total = options.warmup_steps + options.steps + (options.profile ? 1 : 0);
  BenchSteps steps(setup, *replica, *comm, config.vocab_size, total);
  TrainBenchResult r;
  r.frozen_weight_bytes = replica->frozen_bytes();  // before any step: the weights alone
  float final_loss = 0;
  const std::vector<PhaseSeconds> timed =
      run_steps(steps, *replica, options, final_loss, r.profile);

  // Read before the sgemm below allocates its matrices. The peak is the better of a measurement
  // before the model existed and one now: on a shared machine either can catch a busy moment,
  // and the MFU should not exceed 100% because the peak was measured in one.
  const auto rss = static_cast<unsigned long long>(peak_resident_bytes());
  const double peak_gflops =
      on_gpu
          ? replica->peak_flops_per_s() * 1e-9
          : std::max(peak_before, kernels::measure_sgemm_gflops(options.sgemm_size, kSgemmRepeats));
  const RankFigures figures = reduce_figures(timed, *replica, engine, peak_gflops, final_loss, rss,
                                             setup.topology.world_size);

  describe_run(r, setup, options, config, layout, engine);
  const double tokens_per_step = static_cast<double>(steps.batch_tokens()) *
                                 static_cast<double>(params.gradient_accumulation) *
                                 setup.topology.world_size;
  set_timings(r, figures, options, tokens_per_step);
  r.final_loss = static_cast<double>(figures.final_loss) / setup.topology.world_size;
  set_memory(r, figures, *replica);
  return r;
}

}  // namespace autotrain::train
