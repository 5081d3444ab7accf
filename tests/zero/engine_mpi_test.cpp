// The ZeRO engines against a single-rank reference computed inside the same test: the tiny GPT-2
// (L = 2, NH = 2, C = 32, T = 16, byte vocabulary 256), and a tiny Llama-family model with grouped
// key/value heads (Qwen3's shape: NH = 4, NKV = 2, head_dim 12, q/k norms, an untied LM head, so
// its own hook order) trained 20 AdamW steps with clipping on a
// deterministic synthetic dataset laid out as the sampler lays it out. Every rank computes the
// reference alone (FlatUnitAccess + Optimizer, no communication), so one mpirun proves that
// np = 1..4 with stages 0..3, over MPI and Gloo, follow the single-rank stage-0 loss curve and
// reach the same parameters.
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "autotrain/comm/communicator.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/strings.hpp"
#include "autotrain/kernels/threads.hpp"
#include "autotrain/model/causal_lm.hpp"
#include "autotrain/model/init.hpp"
#include "autotrain/model/param_layout.hpp"
#include "autotrain/optim/optimizer.hpp"
#include "autotrain/optim/schedule.hpp"
#include "autotrain/zero/engine.hpp"
#include "autotrain/zero/partition.hpp"

namespace autotrain::zero::engine_mpi_test {
namespace {

constexpr int kB = 2;  // sequences per rank and micro-step
constexpr int kT = 16;
constexpr int kSteps = 20;
constexpr std::uint64_t kSeed = 1234;
// Clipping must act at least once; the Llama-family model's gradients are smaller.
double max_grad_norm(bool llama) {
  return llama ? 0.5 : 1.0;
}

model::ModelConfig tiny(bool llama = false) {
  if (!llama) return model::ModelConfig::gpt2(2, 2, 32, kT, 256);
  model::ModelConfig c = model::ModelConfig::gpt2(2, 4, 32, kT, 256);
  c.family = model::Family::llama;
  c.architecture = "Qwen3ForCausalLM";
  c.n_kv_head = 2;
  c.head_dim = 12;
  c.intermediate_size = 48;
  c.tie_word_embeddings = false;
  c.qk_norm = true;
  c.norm_eps = 1e-6;
  c.rope_theta = 1e6;
  return c;
}

// Sequences per optimizer step: 8 lets np = 1, 2, 4 share one global batch (accumulation 4, 2,
// 1); np = 3 needs a multiple of 3 · kB, and is compared against np = 1 with the same 12.
int global_batch(int world_size) {
  return world_size == 3 ? 12 : 8;
}

int rank_of_world() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Sequence `position` of step `step`: a noisy arithmetic progression (learnable, so the loss
// moves), T + 1 tokens shifted into inputs and targets.
void fill_sequence(int step, int position, std::int32_t* inputs, std::int32_t* targets) {
  const std::uint64_t key =
      mix(static_cast<std::uint64_t>(step) * 1000003ULL + static_cast<std::uint64_t>(position));
  const auto start = static_cast<std::int32_t>(key % 256);
  const auto stride = static_cast<std::int32_t>(1 + (key >> 8) % 7);
  for (int t = 0; t <= kT; ++t) {
    const bool noise = mix(key + static_cast<std::uint64_t>(t)) % 8 == 0;
    const auto token = static_cast<std::int32_t>(
        noise ? mix(key ^ static_cast<std::uint64_t>(t)) % 256 : (start + stride * t) % 256);
    if (t < kT) inputs[t] = token;
    if (t > 0) targets[t - 1] = token;
  }
}

// The micro-batch of `rank` at micro-step `micro` (global position (m · W + r) · B + b).
void fill_micro_batch(int step, int micro, int rank, int world, std::vector<std::int32_t>& inputs,
                      std::vector<std::int32_t>& targets) {
  for (int b = 0; b < kB; ++b) {
    const int position = (micro * world + rank) * kB + b;
    fill_sequence(step, position, inputs.data() + b * kT, targets.data() + b * kT);
  }
}

OptimizerSettings adamw() {
  OptimizerSettings settings;
  settings.weight_decay = 0.1f;
  return settings;
}

LrSchedule schedule() {
  return LrSchedule(ScheduleKind::cosine, 3e-3, kSteps, 0.1);
}

struct Trajectory {
  std::vector<double> losses;                         // global mean loss per step
  std::vector<double> norms;                          // global gradient norm per step
  std::map<std::string, std::vector<float>> tensors;  // final parameters, by name
};

// np = 1, stage 0, no communicator: the plain single-rank training loop.
const Trajectory& reference(int global, bool llama) {
  static std::map<std::pair<int, bool>, Trajectory> cache;
  if (auto it = cache.find({global, llama}); it != cache.end()) return it->second;
  const model::ParamLayout layout(tiny(llama), 1);
  std::vector<float> params(layout.padded_size());
  std::vector<float> grads(layout.padded_size());
  model::init_params(layout, kSeed, params);
  model::FlatUnitAccess access(layout, params.data(), grads.data());
  const auto lm = model::make_causal_lm<float>(layout, kB, kT);
  model::CausalLM& model = *lm;
  Optimizer optimizer(adamw(), owned_segments(layout, {0, layout.padded_size()}));
  std::vector<std::int32_t> inputs(kB * kT), targets(kB * kT);
  const int accumulation = global / kB;
  Trajectory result;
  for (int step = 0; step < kSteps; ++step) {
    std::fill(grads.begin(), grads.end(), 0.0f);
    double loss = 0;
    for (int m = 0; m < accumulation; ++m) {
      fill_micro_batch(step, m, 0, 1, inputs, targets);
      loss += model.forward(access, inputs.data(), targets.data());
      model.backward(access, 1.0f / static_cast<float>(accumulation));
    }
    double sum = 0;
    for (const float g : grads) sum += double{g} * double{g};
    const double norm = std::sqrt(sum);
    optimizer.step(params, grads, 0, static_cast<float>(schedule().lr(step)),
                   clip_factor(norm, max_grad_norm(llama)));
    result.losses.push_back(loss / accumulation);
    result.norms.push_back(norm);
  }
  for (const auto& tensor : layout.tensors()) {
    result.tensors[tensor.name].assign(
        params.begin() + static_cast<long>(tensor.offset),
        params.begin() + static_cast<long>(tensor.offset + tensor.numel));
  }
  return cache.emplace(std::pair{global, llama}, std::move(result)).first->second;
}

struct RunOptions {
  int stage = 0;
  std::size_t bucket = 10000;  // tiny model: buckets {ln_f, h.1}, {h.0}, {embeddings}
  int prefetch = 1;
  bool llama = false;
  const char* nvme_path = nullptr;  // offload_optimizer nvme there
};

struct EngineRun {
  Trajectory trajectory;
  std::vector<float> exp_avg;  // AdamW's m of this rank's shard runs, in their order
  MemoryReport memory;
  int peak_gathered_units = 0;
};

// The trainer's call sequence on `comm`; final parameters are collected on rank 0 only.
EngineRun train(Communicator& comm, const RunOptions& run) {
  const int world = comm.size();
  const int rank = comm.rank();
  const int global = global_batch(world);
  const model::ParamLayout layout(tiny(run.llama), world);
  EngineOptions options;
  options.stage = run.stage;
  options.reduce_bucket_size = run.bucket;
  options.prefetch = run.prefetch;
  options.optimizer = adamw();
  if (run.nvme_path != nullptr) {
    options.offload_optimizer = Offload::nvme;
    options.nvme_path = run.nvme_path;
  }
  auto engine = Engine::create(layout, comm, options);
  engine->init_parameters(model::RandomInit(kSeed));
  const auto lm = model::make_causal_lm<float>(layout, kB, kT);
  model::CausalLM& model = *lm;
  std::vector<std::int32_t> inputs(kB * kT), targets(kB * kT);
  const int accumulation = global / (world * kB);
  EngineRun result;
  for (int step = 0; step < kSteps; ++step) {
    engine->begin_step();
    float loss = 0;
    for (int m = 0; m < accumulation; ++m) {
      engine->begin_micro_step(m == accumulation - 1);
      fill_micro_batch(step, m, rank, world, inputs, targets);
      loss += model.forward(*engine, inputs.data(), targets.data());
      model.backward(*engine, 1.0f / static_cast<float>(accumulation));
    }
    engine->finish_backward();
    const double norm = engine->grad_norm();
    engine->step(static_cast<float>(schedule().lr(step)),
                 clip_factor(norm, max_grad_norm(run.llama)));
    float mean = loss / static_cast<float>(accumulation);
    comm.allreduce(std::span<float>(&mean, 1), ReduceOp::avg);
    result.trajectory.losses.push_back(mean);
    result.trajectory.norms.push_back(norm);
  }
  for (int u = 0; u < layout.num_units(); ++u) {
    const auto& unit = layout.units()[static_cast<std::size_t>(u)];
    std::vector<float> whole(rank == 0 ? unit.numel : 0);
    engine->gather_unit(u, whole, 0);
    if (rank != 0) continue;
    for (int t = unit.first_tensor; t < unit.first_tensor + unit.tensor_count; ++t) {
      const auto& tensor = layout.tensors()[static_cast<std::size_t>(t)];
      const auto begin = whole.begin() + static_cast<long>(layout.offset_in_unit(tensor));
      result.trajectory.tensors[tensor.name].assign(begin, begin + static_cast<long>(tensor.numel));
    }
  }
  for (const auto& state : engine->shard_runs()) {  // in memory, or streamed from NVMe
    if (!state.holds(kExpAvg)) continue;
    const std::size_t at = result.exp_avg.size();
    result.exp_avg.resize(at + state.size());
    state.read(kExpAvg, 0, std::span<float>(result.exp_avg).subspan(at));
  }
  result.memory = engine->memory();
  result.peak_gathered_units = engine->peak_gathered_units();
  return result;
}

// 1e-5 as the issue asks. np = 3 is compared on a 12-sequence batch (the reference sums 6
// micro-steps in float), where one element of h.0.mlp.c_fc.weight ends 1.5e-5 away at stages 0/1
// with AVX-512 OpenBLAS kernels and 3.4e-5 away with AVX2 ones (an EPYC without AVX-512): AdamW's
// m / sqrt(v) amplifies the rounding-order difference of an element whose gradient nearly
// cancels. A real bug (a lost contribution, a sum instead of a mean) moves parameters by ~lr
// (3e-3) a step, 30x the np = 3 bound. The Llama-family model has the same kind of element at
// any world size: a row of its untied embeddings that few tokens reach ends 1.2e-5 (np = 2) to
// 1.9e-5 (np = 4) away, so it is held to the np = 3 bound.
double parameter_tolerance(int world, bool llama) {
  return world == 3 || llama ? 1e-4 : 1e-5;
}

void expect_matches_reference(const Trajectory& got, int world, bool llama = false) {
  const Trajectory& want = reference(global_batch(world), llama);
  ASSERT_EQ(got.losses.size(), want.losses.size());
  for (std::size_t s = 0; s < want.losses.size(); ++s) {
    EXPECT_NEAR(got.losses[s], want.losses[s], 1e-5 * std::abs(want.losses[s])) << "step " << s;
    EXPECT_NEAR(got.norms[s], want.norms[s], 1e-4 * want.norms[s]) << "grad norm, step " << s;
  }
  // The run must have learned something and clipped at least once, or the test proves little.
  EXPECT_LT(want.losses.back(), want.losses.front() - 0.05);
  EXPECT_GT(*std::max_element(want.norms.begin(), want.norms.end()), max_grad_norm(llama));
  if (rank_of_world() != 0) return;
  ASSERT_EQ(got.tensors.size(), want.tensors.size());
  for (const auto& [name, values] : want.tensors) {
    const auto& mine = got.tensors.at(name);
    ASSERT_EQ(mine.size(), values.size()) << name;
    double worst = 0;
    std::size_t at = 0;
    for (std::size_t i = 0; i < values.size(); ++i) {
      const double diff = std::abs(double{mine[i]} - double{values[i]});
      if (diff > worst) {
        worst = diff;
        at = i;
      }
    }
    EXPECT_LE(worst, parameter_tolerance(world, llama))
        << name << "[" << at << "] = " << mine[at] << ", reference " << values[at];
  }
}

std::unique_ptr<Communicator> communicator(CommBackend backend) {
  return make_communicator(backend, MPI_COMM_WORLD, CommOptions{});
}

struct Case {
  CommBackend backend;
  int stage;
  bool llama = false;
};

class ZeroEquivalence : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override { kernels::set_num_threads(1); }
};

TEST_P(ZeroEquivalence, FollowsSingleRankStage0LossCurveAndFinalParameters) {
  auto comm = communicator(GetParam().backend);
  const EngineRun run = train(*comm, {.stage = GetParam().stage, .llama = GetParam().llama});
  expect_matches_reference(run.trajectory, comm->size(), GetParam().llama);
}

INSTANTIATE_TEST_SUITE_P(AllStages, ZeroEquivalence,
                         ::testing::Values(Case{CommBackend::mpi, 0}, Case{CommBackend::mpi, 1},
                                           Case{CommBackend::mpi, 2}, Case{CommBackend::mpi, 3},
                                           Case{CommBackend::gloo, 0}, Case{CommBackend::gloo, 1},
                                           Case{CommBackend::gloo, 2}, Case{CommBackend::gloo, 3},
                                           Case{CommBackend::mpi, 0, true},
                                           Case{CommBackend::gloo, 2, true},
                                           Case{CommBackend::gloo, 3, true}),
                         [](const ::testing::TestParamInfo<Case>& param) {
                           return cat(param.param.llama ? "llama_" : "",
                                      comm_backend_name(param.param.backend), "_stage",
                                      param.param.stage);
                         });

// offload_optimizer nvme: AdamW's moments in a scratch file under a folder the ranks share (one
// host), streamed block by block through the step: the same training and the same moments as in
// memory, at stages 1-3; the files are gone after the engine.
TEST(ZeroEngine, NvmeOffloadTrainsAsInMemoryAndKeepsTheSameMoments) {
  // One thread, as the other tests here: at np 3-4 on 2 cores, idle OpenMP threads spinning
  // beside a rank that waits on its file made this test 100 times slower (44 s at np 3).
  kernels::set_num_threads(1);
  auto comm = communicator(CommBackend::mpi);
  int id = static_cast<int>(getpid());
  MPI_Bcast(&id, 1, MPI_INT, 0, MPI_COMM_WORLD);
  const auto folder = std::filesystem::temp_directory_path() / cat("autotrain-nvme-test-", id);
  if (comm->rank() == 0) std::filesystem::create_directories(folder);
  MPI_Barrier(MPI_COMM_WORLD);
  for (const int stage : {1, 2, 3}) {
    const EngineRun memory = train(*comm, {.stage = stage});
    const EngineRun nvme = train(*comm, {.stage = stage, .nvme_path = folder.c_str()});
    expect_matches_reference(nvme.trajectory, comm->size());
    for (std::size_t s = 0; s < memory.trajectory.losses.size(); ++s) {
      EXPECT_NEAR(nvme.trajectory.losses[s], memory.trajectory.losses[s],
                  1e-6 * std::abs(memory.trajectory.losses[s]))
          << "stage " << stage << ", step " << s;
    }
    ASSERT_EQ(nvme.exp_avg.size(), memory.exp_avg.size());
    for (std::size_t i = 0; i < memory.exp_avg.size(); ++i) {
      ASSERT_NEAR(nvme.exp_avg[i], memory.exp_avg[i], 1e-6 + 1e-4 * std::abs(memory.exp_avg[i]))
          << "stage " << stage << ", m[" << i << "]";
    }
    EXPECT_EQ(nvme.memory.optimizer_bytes, 0u);
    EXPECT_GE(nvme.memory.nvme_bytes, 2 * memory.exp_avg.size() * sizeof(float));
    MPI_Barrier(MPI_COMM_WORLD);  // every rank's engine is gone
    EXPECT_TRUE(std::filesystem::is_empty(folder)) << "a scratch file outlived its engine";
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (comm->rank() == 0) std::filesystem::remove_all(folder);
}

// Counts the elements each kind of collective moves (input of reduce-scatter, output of
// all-gather, the buffer of all-reduce) and passes everything on to `inner`.
class CountingCommunicator final : public Communicator {
 public:
  explicit CountingCommunicator(Communicator& inner) : inner_(inner) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  std::string_view name() const override { return inner_.name(); }
  CommHandle allreduce_async(void* data, size_t count, DType dtype, ReduceOp op) override {
    allreduced += count;
    return inner_.allreduce_async(data, count, dtype, op);
  }
  CommHandle reduce_scatter_async(const void* input, void* output, size_t part, DType dtype,
                                  ReduceOp op) override {
    reduce_scattered += part * static_cast<size_t>(size());
    return inner_.reduce_scatter_async(input, output, part, dtype, op);
  }
  CommHandle allgather_async(const void* input, void* output, size_t part, DType dtype) override {
    allgathered += part * static_cast<size_t>(size());
    return inner_.allgather_async(input, output, part, dtype);
  }
  CommHandle broadcast_async(void* data, size_t count, DType dtype, int root) override {
    return inner_.broadcast_async(data, count, dtype, root);
  }
  CommHandle barrier_async() override { return inner_.barrier_async(); }

  size_t allreduced = 0, reduce_scattered = 0, allgathered = 0;

 private:
  Communicator& inner_;
};

// ZeRO-1 reduce-scatters the gradients (a rank updates only its shard) and all-gathers the
// parameters: one gradient buffer each way per step, the bytes of DDP's all-reduce, where an
// all-reduce followed by the all-gather would move 1.5 times as much.
TEST(ZeroEngine, Stage1MovesWhatStage0Moves) {
  auto comm = communicator(CommBackend::mpi);
  const std::size_t padded = model::ParamLayout(tiny(), comm->size()).padded_size();
  const std::size_t steps = kSteps;
  const std::size_t norms = steps * 2 * static_cast<std::size_t>(comm->size());  // grad_norm
  const std::size_t losses = steps;  // train()'s loss average
  CountingCommunicator stage0(*comm);
  train(stage0, {.stage = 0});
  EXPECT_EQ(stage0.allreduced, steps * padded + losses);
  EXPECT_EQ(stage0.reduce_scattered, 0u);
  EXPECT_EQ(stage0.allgathered, norms);
  CountingCommunicator stage1(*comm);
  train(stage1, {.stage = 1});
  EXPECT_EQ(stage1.allreduced, losses);
  EXPECT_EQ(stage1.reduce_scattered, steps * padded);
  EXPECT_EQ(stage1.allgathered, steps * padded + norms);
  // An all-reduce is a reduce-scatter and an all-gather of the same buffer.
  EXPECT_EQ(stage1.reduce_scattered + stage1.allgathered - norms, 2 * (stage0.allreduced - losses));
}

TEST(ZeroEngine, Stage3MatchesReferenceWithoutPrefetchAndWithDeepPrefetch) {
  kernels::set_num_threads(1);
  auto comm = communicator(CommBackend::gloo);
  for (const int prefetch : {0, 3}) {
    SCOPED_TRACE(cat("prefetch ", prefetch));
    const EngineRun run = train(*comm, {.stage = 3, .bucket = 1, .prefetch = prefetch});
    expect_matches_reference(run.trajectory, comm->size());
  }
}

TEST(ZeroEngine, Stage2And3MatchReferenceWithOneBucketPerUnitAndOneBucketForAll) {
  kernels::set_num_threads(1);
  auto comm = communicator(CommBackend::mpi);
  for (const std::size_t bucket : {std::size_t{1}, std::size_t{1} << 30}) {
    for (const int stage : {0, 2, 3}) {
      SCOPED_TRACE(cat("bucket ", bucket, " stage ", stage));
      expect_matches_reference(train(*comm, {.stage = stage, .bucket = bucket}).trajectory,
                               comm->size());
    }
  }
}

// Bytes of model state per rank against the ZeRO paper's formulas (P = padded parameters in
// bytes, N = ranks, AdamW's K = 2 state floats per parameter): stage 0 P + P + KP, stage 1
// P + (P + P/N) + KP/N, stage 2 P + (P + KP)/N, stage 3 (P + P + KP)/N; the optimizer leaves
// padding out, so it is compared by summing over ranks.
TEST(ZeroEngine, MemoryReportFollowsTheZeroFormulas) {
  auto comm = communicator(CommBackend::mpi);
  const auto world = static_cast<std::size_t>(comm->size());
  const model::ParamLayout layout(model::ModelConfig::gpt2(6, 2, 32, kT, 256), comm->size());
  const std::size_t p_bytes = layout.padded_size() * sizeof(float);
  std::size_t logical = 0;  // tensor elements, padding excluded
  for (const auto& tensor : layout.tensors()) logical += tensor.numel;
  std::size_t largest_unit = 0;
  for (const auto& unit : layout.units()) largest_unit = std::max(largest_unit, unit.padded_numel);
  for (int stage = 0; stage <= 3; ++stage) {
    SCOPED_TRACE(cat("stage ", stage));
    EngineOptions options;
    options.stage = stage;
    options.reduce_bucket_size = 1;  // one unit per bucket
    options.prefetch = 1;
    const MemoryReport memory = Engine::create(layout, *comm, options)->memory();
    EXPECT_EQ(memory.param_bytes, stage == 3 ? p_bytes / world : p_bytes);
    // Stage 1 keeps the reduced shard besides the buffer backward accumulates into.
    EXPECT_EQ(memory.grad_bytes, stage >= 2   ? p_bytes / world
                                 : stage == 1 ? p_bytes + p_bytes / world
                                              : p_bytes);
    std::int64_t optimizer = static_cast<std::int64_t>(memory.optimizer_bytes);
    if (stage == 0) {
      EXPECT_EQ(memory.optimizer_bytes, 2 * logical * sizeof(float));
    } else {
      EXPECT_LE(memory.optimizer_bytes, 2 * p_bytes / world);
      comm->allreduce(std::span<std::int64_t>(&optimizer, 1), ReduceOp::sum);
      EXPECT_EQ(static_cast<std::size_t>(optimizer), 2 * logical * sizeof(float));
    }
    if (stage <= 1) {
      EXPECT_EQ(memory.working_bytes, 0u);
    } else {
      // Two block buckets and unit 0's buffer (each with its received part), plus under stage 3
      // prefetch + 1 gathered units: a few units, never the model.
      const std::size_t gradient_working =
          3 * largest_unit * sizeof(float) + 3 * largest_unit * sizeof(float) / world;
      const std::size_t gathered = stage == 3 ? 2 * largest_unit * sizeof(float) : 0;
      EXPECT_GT(memory.working_bytes, 0u);
      EXPECT_LE(memory.working_bytes, gradient_working + gathered);
    }
  }
}

TEST(ZeroEngine, Stage3NeverHoldsMoreThanPrefetchPlusOneGatheredUnits) {
  kernels::set_num_threads(1);
  auto comm = communicator(CommBackend::mpi);
  for (const int prefetch : {0, 1, 2}) {
    const EngineRun run = train(*comm, {.stage = 3, .prefetch = prefetch});
    EXPECT_GE(run.peak_gathered_units, 1);
    EXPECT_LE(run.peak_gathered_units, prefetch + 1) << "prefetch " << prefetch;
    EXPECT_EQ(run.memory.param_bytes, model::ParamLayout(tiny(), comm->size()).padded_size() *
                                          sizeof(float) / static_cast<std::size_t>(comm->size()));
  }
}

// Checkpoints write shard_runs(): together the ranks cover every element of every tensor exactly
// once, each run inside one tensor, with the values the seed gives (stage 3 initialises only its
// shard) and optimizer state attached.
TEST(ZeroEngine, ShardRunsCoverEveryTensorElementOnceWithSeedValues) {
  auto comm = communicator(CommBackend::mpi);
  const model::ParamLayout layout(tiny(), comm->size());
  std::size_t logical = 0;
  for (const auto& tensor : layout.tensors()) logical += tensor.numel;
  for (int stage = 0; stage <= 3; ++stage) {
    SCOPED_TRACE(cat("stage ", stage));
    EngineOptions options;
    options.stage = stage;
    auto engine = Engine::create(layout, *comm, options);
    engine->init_parameters(model::RandomInit(kSeed));
    std::int64_t covered = 0;
    for (const StateRun& run : engine->shard_runs()) {
      ASSERT_LT(run.begin, run.end);
      ASSERT_NE(run.params, nullptr);
      ASSERT_NE(run.exp_avg, nullptr);
      ASSERT_NE(run.exp_avg_sq, nullptr);
      bool inside_one_tensor = false;
      for (const auto& tensor : layout.tensors()) {
        inside_one_tensor |= run.begin >= tensor.offset && run.end <= tensor.offset + tensor.numel;
      }
      EXPECT_TRUE(inside_one_tensor) << "[" << run.begin << ", " << run.end << ")";
      std::vector<float> want(run.end - run.begin);
      model::init_params(layout, kSeed, want, run.begin);
      EXPECT_TRUE(std::equal(want.begin(), want.end(), run.params)) << "[" << run.begin << ")";
      covered += static_cast<std::int64_t>(run.end - run.begin);
    }
    comm->allreduce(std::span<std::int64_t>(&covered, 1), ReduceOp::sum);
    EXPECT_EQ(static_cast<std::size_t>(covered), logical);
    // held_runs: stage 3 holds its shard only; the others hold every parameter.
    std::int64_t held_params = 0;
    for (const StateRun& run : engine->held_runs()) {
      if (run.params != nullptr) held_params += static_cast<std::int64_t>(run.end - run.begin);
    }
    if (stage == 3) {
      comm->allreduce(std::span<std::int64_t>(&held_params, 1), ReduceOp::sum);
    }
    EXPECT_EQ(static_cast<std::size_t>(held_params), logical);
  }
}

TEST(ZeroEngine, RejectsAStageOutsideZeroToThreeAndALayoutForAnotherWorldSize) {
  auto comm = communicator(CommBackend::mpi);
  const model::ParamLayout layout(tiny(), comm->size());
  EngineOptions options;
  options.stage = 4;
  EXPECT_THROW(Engine::create(layout, *comm, options), CollectiveError);
  options.stage = 3;
  const model::ParamLayout wrong(tiny(), comm->size() + 1);
  EXPECT_THROW(Engine::create(wrong, *comm, options), Error);
}

}  // namespace
}  // namespace autotrain::zero::engine_mpi_test
