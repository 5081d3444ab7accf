// `autotrain bench train`: real optimizer steps of a training config (train/bench_train.hpp),
// printed as tokens/s, the forward/backward/optimizer split with the communication wait,
// GFLOP/s, MFU against a measured sgemm peak, and each rank's memory.
//
// Its own flags (--steps, --warmup-steps, --sgemm-size, --no-profile, --json) are taken out of
// the command line and parsed by parse_command_options; every other word is `autotrain train`'s
// command line, parsed by the config layer.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "autotrain/cli/options.hpp"
#include "autotrain/config/command_line.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/mpi.hpp"
#include "autotrain/core/strings.hpp"
#include "autotrain/kernels/threads.hpp"
#include "autotrain/train/bench_train.hpp"
#include "autotrain/train/run_setup.hpp"
#include "kinds.hpp"

namespace autotrain::cli {
namespace {

namespace po = boost::program_options;
using nlohmann::json;

constexpr std::string_view kUsage =
    "usage: autotrain bench train --config X.yaml [train options...] [--steps N]\n"
    "                             [--warmup-steps W] [--sgemm-size N] [--no-profile] [--json]\n"
    "\n"
    "Runs N real optimizer steps (ZeRO engine + model + optimizer, as `train` does) on random\n"
    "tokens and prints tokens/s, the step time split, GFLOP/s, MFU against a measured sgemm peak,\n"
    "and per-rank memory.\n\n";

struct TrainBenchCommandLine {
  train::TrainBenchOptions options;
  bool no_profile = false;
  bool json = false;
  std::vector<std::string> train_args;  // everything that is not a bench flag
};

po::options_description train_bench_options(TrainBenchCommandLine& line) {
  po::options_description description("bench train options");
  description.add_options()  //
      ("steps", po::value(&line.options.steps)->value_name("N"),
       "timed optimizer steps (default 10)")  //
      ("warmup-steps", po::value(&line.options.warmup_steps)->value_name("W"),
       "untimed steps first (default 2)")  //
      ("sgemm-size", po::value(&line.options.sgemm_size)->value_name("N"),
       "n of the n x n x n sgemm that measures each rank's peak (default 2048)")  //
      ("no-profile", po::bool_switch(&line.no_profile),
       "skip the extra step with per-kernel timers")  //
      ("json", po::bool_switch(&line.json), "print one JSON document instead of tables");
  return description;
}

// Moves each bench flag (with its value, as the next word or after '=') to `own`; the other
// words, in order, are train's command line.
void split_bench_flags(const po::options_description& description,
                       const std::vector<std::string>& args, std::vector<std::string>& own,
                       std::vector<std::string>& train_args) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    const std::size_t equals = arg.find('=');
    const po::option_description* option =
        arg.rfind("--", 0) == 0
            ? description.find_nothrow(
                  arg.substr(2, equals == std::string::npos ? equals : equals - 2), false)
            : nullptr;
    if (option == nullptr) {
      train_args.push_back(arg);
      continue;
    }
    own.push_back(arg);
    const bool takes_value = option->semantic()->max_tokens() > 0;
    if (takes_value && equals == std::string::npos && i + 1 < args.size()) own.push_back(args[++i]);
  }
}

TrainBenchCommandLine parse_train_bench_args(const std::vector<std::string>& args) {
  TrainBenchCommandLine line;
  const po::options_description description = train_bench_options(line);
  std::vector<std::string> own;
  split_bench_flags(description, args, own, line.train_args);
  parse_command_options("bench train", description, own);
  line.options.profile = !line.no_profile;
  if (line.options.steps < 1)
    throw CollectiveError(cat("bench train: --steps ", line.options.steps, " must be at least 1"));
  if (line.options.warmup_steps < 0)
    throw CollectiveError(
        cat("bench train: --warmup-steps ", line.options.warmup_steps, " must be 0 or more"));
  if (line.options.sgemm_size < 64)
    throw CollectiveError(
        cat("bench train: --sgemm-size ", line.options.sgemm_size, " must be at least 64"));
  return line;
}

// A misspelt bench flag reaches the train parser, which does not know the bench flags: the
// closest bench flag to the one the train parser rejected, or "".
std::string bench_flag_hint(const std::vector<std::string>& train_args, const std::string& error) {
  TrainBenchCommandLine unused;
  const po::options_description description = train_bench_options(unused);
  std::vector<std::string> bench_flags;
  for (const auto& option : description.options())
    bench_flags.push_back("--" + option->long_name());
  for (const auto& arg : train_args) {
    const std::string flag = arg.substr(0, arg.find('='));
    if (flag.rfind("--", 0) != 0 || error.find(flag) == std::string::npos) continue;
    std::string hint = did_you_mean(flag, bench_flags);
    if (!hint.empty()) return hint;
  }
  return "";
}

json train_bench_json(const train::TrainBenchResult& r) {
  json profile = json::array();
  for (const auto& p : r.profile)
    profile.push_back(
        {{"kernel", p.name}, {"forward_s", p.forward_s}, {"backward_s", p.backward_s}});
  const double step = r.step_mean_s;
  return {{"benchmark", "train"},
          {"world_size", r.world_size},
          {"threads_per_rank", r.threads},
          {"zero_stage", r.zero_stage},
          {"comm_backend", r.comm_backend},
          {"batch_size", r.batch_size},
          {"seq_len", r.seq_len},
          {"gradient_accumulation", r.gradient_accumulation},
          {"steps", r.steps},
          {"warmup_steps", r.warmup_steps},
          {"num_parameters", r.num_parameters},
          {"flops_per_token", r.flops_per_token},
          {"tokens_per_s", r.tokens_per_s},
          {"step_mean_s", r.step_mean_s},
          {"step_min_s", r.step_min_s},
          {"forward_s", r.forward_s},
          {"backward_s", r.backward_s},
          {"optimizer_s", r.optimizer_s},
          {"reduce_tail_s", r.reduce_tail_s},
          {"grad_norm_s", r.grad_norm_s},
          {"comm_wait_s", r.comm_wait_s},
          {"comm_wait_fraction", step > 0 ? r.comm_wait_s / step : 0.0},
          {"gflops_per_s", r.gflops_per_s},
          {"peak_gflops_per_s", r.peak_gflops_per_s},
          {"mfu", r.mfu},
          {"final_loss", r.final_loss},
          {"model_state_bytes",
           {{"params", r.model_state.param_bytes},
            {"grads", r.model_state.grad_bytes},
            {"optimizer", r.model_state.optimizer_bytes},
            {"working", r.model_state.working_bytes},
            {"total", r.model_state.total()},
            {"offloaded_host", r.model_state.host_bytes},
            {"offloaded_nvme", r.model_state.nvme_bytes}}},
          {"activation_bytes", r.activation_bytes},
          {"recompute", r.recompute},
          {"frozen_bytes", r.frozen_bytes},
          {"frozen_weight_bytes", r.frozen_weight_bytes},
          {"device", r.device},
          {"precision", r.precision},
          {"device_memory_bytes", r.device_memory_bytes},
          {"peak_rss_bytes", r.peak_rss_bytes},
          {"blas_threading", kernels::blas_threading()},
          {"profile", profile}};
}

void print_step_figures(const train::TrainBenchResult& r) {
  std::printf("%10s %10s %10s %9s %9s %9s %14s %9s %9s %6s\n", "tokens/s", "step(ms)", "min(ms)",
              "fwd(ms)", "bwd(ms)", "optim(ms)", "comm wait(ms)", "GFLOP/s", "peak", "MFU");
  char wait[40];
  std::snprintf(wait, sizeof wait, "%.1f (%.0f%%)", r.comm_wait_s * 1e3,
                100.0 * r.comm_wait_s / r.step_mean_s);
  std::printf("%10.0f %10.2f %10.2f %9.2f %9.2f %9.2f %14s %9.1f %9.1f %5.1f%%\n", r.tokens_per_s,
              r.step_mean_s * 1e3, r.step_min_s * 1e3, r.forward_s * 1e3, r.backward_s * 1e3,
              r.optimizer_s * 1e3, wait, r.gflops_per_s, r.peak_gflops_per_s, 100.0 * r.mfu);
  std::printf("optimizer phase: reduction tail %.2f ms, grad norm %.2f ms, update %.2f ms\n",
              r.reduce_tail_s * 1e3, r.grad_norm_s * 1e3,
              (r.optimizer_s - r.reduce_tail_s - r.grad_norm_s) * 1e3);
}

void print_memory(const train::TrainBenchResult& r) {
  std::printf("model state per rank: %s; activations %s (recompute %s)",
              zero::describe(r.model_state).c_str(),
              human_bytes(static_cast<double>(r.activation_bytes)).c_str(), r.recompute.c_str());
  if (r.frozen_bytes > 0)
    std::printf("; LoRA's frozen base weights %s (with the units' scratch %s)",
                human_bytes(static_cast<double>(r.frozen_weight_bytes)).c_str(),
                human_bytes(static_cast<double>(r.frozen_bytes)).c_str());
  std::printf("\n");
  std::printf("device %s, compute in %s", r.device.c_str(), r.precision.c_str());
  if (r.device_memory_bytes > 0)
    std::printf(", GPU memory per rank %s (all allocated before the first step)",
                human_bytes(static_cast<double>(r.device_memory_bytes)).c_str());
  std::printf("\n");
  std::printf("peak resident memory (VmHWM) per rank:");
  for (std::size_t rank = 0; rank < r.peak_rss_bytes.size(); ++rank)
    std::printf(" %s", human_bytes(static_cast<double>(r.peak_rss_bytes[rank])).c_str());
  std::printf("\nfinal loss %.4f (random tokens), blas threading %s\n", r.final_loss,
              kernels::blas_threading());
}

void print_train_bench(const train::TrainBenchResult& r) {
  std::printf(
      "bench train: %d rank(s) x %d thread(s), ZeRO stage %d, %s communicator, %zu parameters, "
      "B=%d T=%d accumulation %lld, %lld steps after %lld warm-up\n",
      r.world_size, r.threads, r.zero_stage, r.comm_backend.c_str(), r.num_parameters, r.batch_size,
      r.seq_len, r.gradient_accumulation, r.steps, r.warmup_steps);
  print_step_figures(r);
  print_memory(r);
  if (r.profile.empty()) return;
  std::printf("\n%-14s %10s %10s   (rank 0, one profiled step)\n", "kernel", "fwd(ms)", "bwd(ms)");
  for (const auto& p : r.profile) {
    // A kind with no time of its own ran inside another (on the GPU the GELU rides in the matmul).
    if (p.forward_s == 0.0 && p.backward_s == 0.0) continue;
    std::printf("%-14s %10.2f %10.2f\n", p.name.c_str(), p.forward_s * 1e3, p.backward_s * 1e3);
  }
}

}  // namespace

int run_bench_train(const std::vector<std::string>& args, MpiSession& mpi) {
  TrainBenchCommandLine line = parse_train_bench_args(args);
  config::TrainCommandLine command_line;
  try {
    command_line = config::parse_train_command_line(line.train_args);
  } catch (const Error& error) {
    throw UsageError(cat("bench train: ", error.what(),
                         bench_flag_hint(line.train_args, error.what()),
                         "\nrun 'autotrain bench train --help' for every option"));
  }
  if (command_line.help) {
    if (mpi.rank() == 0) {
      std::cout << kUsage << train_bench_options(line) << "\n"
                << "Every `autotrain train` option is accepted (see 'autotrain train --help').\n";
    }
    return 0;
  }
  const train::RunSetup setup = train::setup_run(command_line);
  if (command_line.dry_run) {
    if (mpi.rank() == 0) std::cout << train::render_plan(setup) << std::flush;
    return 0;
  }
  const train::TrainBenchResult result = train::run_train_bench(setup, line.options);
  if (mpi.rank() != 0) return 0;
  if (line.json) {
    std::cout << train_bench_json(result).dump(2) << "\n";
  } else {
    print_train_bench(result);
  }
  return 0;
}

}  // namespace autotrain::cli
