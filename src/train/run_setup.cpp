#include "autotrain/train/run_setup.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <sstream>
#include <thread>

#include "autotrain/config/base_model.hpp"
#include "autotrain/config/consistency.hpp"
#include "autotrain/core/deadline.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/log.hpp"
#include "autotrain/core/memory_usage.hpp"
#include "autotrain/core/mpi.hpp"
#include "autotrain/core/paths.hpp"
#include "autotrain/core/strings.hpp"
#include "autotrain/kernels/matmul.hpp"
#include "autotrain/launch/affinity.hpp"
#include "autotrain/launch/device.hpp"
#include "autotrain/launch/discover.hpp"
#include "autotrain/model/family.hpp"
#include "autotrain/model/folder.hpp"
#include "autotrain/train/batch_size_finder.hpp"
#include "offload_setup.hpp"

namespace autotrain::train {
namespace {

// The GPU training path needs the CUDA kernels and the NCCL communicator.
#if defined(AUTOTRAIN_HAVE_CUDA) && defined(AUTOTRAIN_HAVE_NCCL)
constexpr bool kCudaTrainingBuilt = true;
#else
constexpr bool kCudaTrainingBuilt = false;
#endif

// --threads wins; then OMP_NUM_THREADS; then the CPUs this rank may use: the launcher's binding
// when it bound us (mpirun --bind-to, srun --cpus-per-task), else the node's cores shared among
// its ranks.
void choose_threads(RunSetup& setup) {
  const auto& params = setup.params();
  if (params.threads > 0) {
    setup.threads = static_cast<int>(params.threads);
    setup.threads_source = "--threads / threads";
    return;
  }
  if (const char* omp = std::getenv("OMP_NUM_THREADS"); omp && std::atoi(omp) > 0) {
    setup.threads = std::atoi(omp);
    setup.threads_source = "OMP_NUM_THREADS";
    return;
  }
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int allowed = static_cast<int>(cpu_affinity().size());
  if (allowed > 0 && allowed < cores) {
    setup.threads = allowed;
    setup.threads_source = "CPU affinity set by the launcher";
  } else {
    setup.threads = std::max(1, cores / std::max(1, setup.node_ranks));
    setup.threads_source = "cores per node / ranks per node";
  }
}

// What this rank may use: the cores of its CPU affinity (all cores without one) and the memory
// of its node shared by the node's ranks, or its address-space limit (ulimit -v) when lower.
struct RankResources {
  int cores = 1;
  double memory_bytes = 0;  // 0 = unknown
  bool memory_is_ulimit = false;
};

RankResources rank_resources(int node_ranks) {
  RankResources resources;
  const int allowed = static_cast<int>(cpu_affinity().size());
  resources.cores =
      allowed > 0 ? allowed : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) {
    resources.memory_bytes =
        static_cast<double>(pages) * static_cast<double>(page) / std::max(1, node_ranks);
  }
  rlimit limit{};
  if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY &&
      (resources.memory_bytes == 0 ||
       static_cast<double>(limit.rlim_cur) < resources.memory_bytes)) {
    resources.memory_bytes = static_cast<double>(limit.rlim_cur);
    resources.memory_is_ulimit = true;
  }
  return resources;
}

std::string memory_text(const RankResources& resources, int local_ranks) {
  return resources.memory_is_ulimit
             ? cat(human_bytes(resources.memory_bytes), " of address space (ulimit -v)")
             : cat(human_bytes(resources.memory_bytes), " (the node's memory shared by its ",
                   local_ranks, " rank(s))");
}

// Before BLAS starts its threads: more threads than cores only slows a run down, and each
// OpenBLAS thread reserves a buffer that an address-space limit may not hold (start-up then
// spins in OpenBLAS's allocator instead of failing).
void check_threads(const RunSetup& setup, const RankResources& resources) {
  constexpr double kBlasBufferPerThread = 128.0 * (1 << 20);
  if (setup.threads > resources.cores) {
    throw Error(cat("threads ", setup.threads, " (", setup.threads_source, ") exceeds the ",
                    resources.cores, " core(s) this rank may run on; use at most ", resources.cores,
                    " (or leave threads at 0 to size it automatically)"));
  }
  const double needed = setup.threads * kBlasBufferPerThread;
  if (resources.memory_is_ulimit && needed > resources.memory_bytes / 2) {
    throw Error(cat("threads ", setup.threads, " need about ", human_bytes(needed),
                    " of BLAS buffers, more than half of the ",
                    memory_text(resources, setup.node_ranks),
                    "; use fewer threads or raise the limit"));
  }
}

// The training state of the model (parameters, gradients and AdamW moments, fp32, as ZeRO
// partitions them; activations not counted) must fit this rank's memory on the CPU: say so
// before allocating, instead of failing inside an allocation (std::bad_alloc).
void check_model_fits(const RunSetup& setup, const RankResources& resources) {
  const auto& params = setup.params();
  if (setup.device != Device::cpu || resources.memory_bytes == 0) return;
  const double C = static_cast<double>(params.n_embd);
  const double V = static_cast<double>(
      model::round_up_vocab(static_cast<int>(std::min<int64_t>(params.vocab_size, 2147483520))));
  const double count = V * C + static_cast<double>(params.n_positions) * C +
                       static_cast<double>(params.n_layer) * (12 * C * C + 13 * C) + 2 * C;
  const double N = setup.topology.world_size;
  const double per_parameter[] = {16, 8 + 8 / N, 4 + 12 / N, 16 / N};
  const double needed = count * per_parameter[std::clamp(setup.zero_stage, 0, 3)];
  if (needed <= resources.memory_bytes) return;
  throw Error(cat("the model (", count, " parameters: n_layer ", params.n_layer, ", n_embd ",
                  params.n_embd, ", vocab_size ", params.vocab_size, ") needs ",
                  human_bytes(needed), " per rank for its training state at ZeRO stage ",
                  setup.zero_stage, ", but this rank has ",
                  memory_text(resources, setup.node_ranks),
                  "; make the model smaller, raise zero_stage or use more ranks"));
}

// device: auto = the rank's GPU when the build has CUDA and the topology bound one, else the
// CPU. The GPU path reduces gradients in device memory, so it needs the NCCL communicator.
// "paged" (bitsandbytes' optimizer state in CUDA unified memory, paged to the host under memory
// pressure) has nothing to page here: said once, and the optimizer is the unpaged one.
void check_optimizer(const RunSetup& setup) {
  const auto& params = setup.params();
  const OptimizerKind kind = parse_optimizer(params.optimizer, "optimizer");
  if (paged_optimizer(params.optimizer) && setup.topology.rank == 0) {
    log::info("paged: optimizer ", params.optimizer,
              " pages bitsandbytes' optimizer state through CUDA unified memory; autotrain has "
              "no unified memory; the optimizer state is ",
              kind == OptimizerKind::adamw_8bit ? "adamw_8bit's" : "adamw's",
              " in ordinary memory (", setup.device == Device::cuda ? "the GPU's" : "the host's",
              ")");
  }
}

void choose_device_and_precision(RunSetup& setup) {
  const auto& params = setup.params();
  const bool gpu = setup.topology.device >= 0;
  const bool built = kCudaTrainingBuilt;
  if (params.device == "cuda") {
    if (!built) {
      throw Error(
          "device: 'cuda' was requested but this build has no CUDA and NCCL (rebuild with "
          "AUTOTRAIN_CUDA=on, see docs/install.md); use --device cpu");
    }
    if (!gpu) {
      throw Error(cat("device: 'cuda' was requested but rank ", setup.topology.rank,
                      " has no GPU bound (see `autotrain env`); use --device cpu"));
    }
  }
  setup.device = params.device == "cuda" || (params.device == "auto" && built && gpu) ? Device::cuda
                                                                                      : Device::cpu;
  setup.precision = params.mixed_precision == "bf16"   ? Precision::bf16
                    : params.mixed_precision == "fp16" ? Precision::fp16
                                                       : Precision::fp32;
  if (setup.device == Device::cpu && setup.comm_backend == CommBackend::nccl) {
    // NCCL reduces device memory; the CPU engine's buffers are host memory.
    if (params.comm_backend != "auto") {
      throw Error("comm_backend nccl reduces GPU memory, but this run trains on the CPU (device " +
                  params.device + "); set device cuda (or auto), or comm_backend mpi or gloo");
    }
    setup.comm_backend = CommBackend::mpi;
  }
  if (setup.device == Device::cuda && setup.comm_backend != CommBackend::nccl) {
    throw Error(
        cat("device cuda keeps gradients in GPU memory and reduces them with NCCL, but "
            "comm_backend is ",
            params.comm_backend, "; set comm_backend nccl (or auto), or device cpu"));
  }
}

}  // namespace

const char* precision_name(Precision precision) {
  switch (precision) {
    case Precision::bf16:
      return "bf16";
    case Precision::fp16:
      return "fp16";
    default:
      return "fp32";
  }
}

namespace {

// Ranks running different builds would compute different things (a loss that drifts apart at
// step 75): refuse, naming the builds, before anything else is agreed on.
void check_same_build(MPI_Comm world) {
  const std::string mine = build_id();
  const std::string reference = broadcast_string_or_abort(mine, 0, world, "the autotrain build");
  agree_or_throw(mine == reference,
                 cat("this rank runs autotrain build ", mine, " (", executable_path().string(),
                     ") but rank 0 runs build ", reference,
                     ": every rank must run the same binary (install one build where all nodes "
                     "see it, or rebuild everywhere from the same sources)"),
                 world, "the autotrain build");
}

// On the CPU, bf16 computes natively (oneDNN, AVX512-BF16 or AMX-BF16) when every rank's CPU has
// it; fp16, and bf16 elsewhere, compute in fp32 (said once). Collective over `world`.
void resolve_cpu_precision(RunSetup& setup, MPI_Comm world) {
  if (setup.precision == Precision::fp32) return;
  const bool native = setup.precision == Precision::bf16 && kernels::cpu_has_native_bf16();
  const bool same = same_on_all_ranks(native, world, "the CPUs' bf16 support");
  if (native && same) return;
  const std::string& asked = setup.params().mixed_precision;
  setup.precision = Precision::fp32;
  if (setup.topology.rank != 0) return;
  if (asked == "fp16") {
    log::warn("mixed_precision fp16 runs on GPUs only; on the CPU this run computes in fp32");
  } else if (!same) {
    log::warn(
        "mixed_precision bf16: the CPUs of some ranks have no native bf16 (AVX512-BF16 or "
        "AMX-BF16); this run computes in fp32 on every rank");
  } else {
    log::warn("mixed_precision bf16: this CPU has no native bf16 (oneDNN found ",
              kernels::cpu_gemm_isa(),
              "; bf16 needs AVX512-BF16 or AMX-BF16); this run computes "
              "in fp32");
  }
}

}  // namespace

std::string oversubscription_warning(int node_ranks, int threads, int node_cores,
                                     const char* omp_wait_policy) {
  const long wanted = static_cast<long>(node_ranks) * threads;
  if (threads <= 1 || wanted <= node_cores) return {};  // one thread never waits for others
  const std::string policy = omp_wait_policy == nullptr ? "" : omp_wait_policy;
  std::string lower;
  for (const char c : policy)
    lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "passive") return {};
  return cat(node_ranks, " rank(s) × ", threads, " thread(s) = ", wanted,
             " OpenMP threads on this node's ", node_cores,
             " core(s), and OpenMP threads spin while they wait (OMP_WAIT_POLICY ",
             policy.empty() ? "unset" : policy,
             "): set OMP_WAIT_POLICY=passive for the job (mpirun -x OMP_WAIT_POLICY, or export "
             "it before srun), or use fewer threads");
}

namespace {

// Every rank reads the files itself; whoever fails first speaks for all. Then the project
// folder, the same build on every rank, and the log level.
void load_run_params(RunSetup& setup, const config::TrainCommandLine& command_line) {
  std::string failure;
  try {
    setup.resolved = config::load_params(command_line.inputs(), model::folder_shape);
    // From here on every collective outside a communicator waits at most comm_timeout too.
    set_collective_timeout(static_cast<double>(setup.params().comm_timeout));
  } catch (const Error& error) {
    failure = error.what();
  }
  stop_here_if_asked("setup");
  agree_or_throw(failure.empty(), failure, setup.comm, "reading the configuration");
  const auto& params = setup.params();
  setup.project_dir = setup.model < 0
                          ? std::filesystem::path(params.project_name)
                          : std::filesystem::path(params.project_name) / cat("model-", setup.model);
  check_same_build(setup.comm);
  // log_level from a config or flag wins; otherwise AUTOTRAIN_LOG_LEVEL (read by the logger).
  if (setup.resolved.provenance.at("log_level") != "default") {
    log::set_level(log::parse_level(params.log_level, "log_level"));
  }
}

void discover_run_topology(RunSetup& setup, const RunRanks& ranks) {
  const auto& params = setup.params();
  DiscoverOptions discover;
  discover.master_port = static_cast<int>(params.master_port);
  // Too few GPUs for the node's ranks is an error naming them (and CUDA_VISIBLE_DEVICES).
  discover.want_gpu = params.comm_backend == "nccl" || params.device == "cuda";
  discover.job = ranks.job;
  {
    const CollectiveDeadline deadline("topology discovery");
    setup.topology = discover_topology(setup.comm, discover);
  }
  stop_here_if_asked("topology");
  export_topology(setup.topology);
  setup.node_ranks = ranks.job ? ranks.job->local_world_size : setup.topology.local_world_size;
}

// The parameters for this world, the communicator, device and precision: each rank's choice,
// checked on every rank.
void resolve_for_world(RunSetup& setup, const RunRanks& ranks) {
  const auto& params = setup.params();
  std::string failure;
  try {
    config::derive_for_world(setup.resolved, setup.topology.world_size);
    // num_nodes and num_gpus_per_node describe the job, also when it trains several models.
    config::validate_for_topology(params, ranks.job ? *ranks.job : setup.topology);
    (void)lr_schedule(params, 1);  // lr_scheduler_kwargs fit the scheduler (also in --dry-run)
    setup.comm_backend = resolve_comm_backend(
        parse_comm_backend(params.comm_backend, "comm_backend"), setup.topology);
    choose_device_and_precision(setup);
    check_optimizer(setup);
    check_offload(setup);
  } catch (const Error& error) {
    failure = error.what();
  }
  agree_or_throw(failure.empty(), failure, setup.comm, "the device, precision and communicator");
}

// The same parameters, communicator and kind of device on every rank.
void agree_across_ranks(RunSetup& setup) {
  const auto& params = setup.params();
  MPI_Comm world = setup.comm;
  config::check_same_params_across_ranks(params, world);

  // `auto` resolves per rank; nodes that see different devices must not pick different ones.
  if (!same_on_all_ranks(static_cast<int>(setup.comm_backend), world, "the communicator")) {
    throw CollectiveError(cat("comm_backend ", params.comm_backend,
                              " resolved to different communicators on different ranks (some "
                              "ranks have a GPU, others not); set comm_backend explicitly"));
  }

  // Every rank must train on the same kind of device (ranks without a GPU would pick the CPU).
  if (!same_on_all_ranks(static_cast<int>(setup.device), world, "the device")) {
    throw CollectiveError(cat("device ", params.device,
                              " resolved to the GPU on some ranks and the CPU on others; give "
                              "every rank a GPU or set device cpu"));
  }
  if (setup.device == Device::cpu) resolve_cpu_precision(setup, world);
}

// auto_find_batch_size: the micro-batch whose plan fits this rank's memory: its GPU's, or on
// the CPU its share of the node's (or ulimit -v). Collective over setup.comm.
void choose_batch_size_for_memory(RunSetup& setup) {
  if (!setup.params().auto_find_batch_size) return;
  if (setup.device == Device::cuda) {
    const auto bytes = static_cast<double>(gpu_memory_bytes(setup.topology.device));
    choose_batch_size(setup, bytes, cat(human_bytes(bytes), " on GPU ", setup.topology.device));
    return;
  }
  const RankResources resources = rank_resources(setup.node_ranks);
  if (!resources.memory_is_ulimit) {
    choose_batch_size(setup, resources.memory_bytes, memory_text(resources, setup.node_ranks));
    return;
  }
  // The limit counts the address space the process maps already (libraries, MPI, threads).
  const double mapped = static_cast<double>(address_space_bytes());
  const double left = std::max(0.0, resources.memory_bytes - mapped);
  choose_batch_size(
      setup, left,
      cat(human_bytes(left), " of address space left under ulimit -v ",
          human_bytes(resources.memory_bytes), " (", human_bytes(mapped), " mapped already)"));
}

// The threads per rank, a warning when a node's CPU ranks oversubscribe its cores, the
// micro-batch of auto_find_batch_size, and whether the threads and the model fit this rank's
// share of the node.
void choose_and_check_threads(RunSetup& setup) {
  choose_threads(setup);
  choose_batch_size_for_memory(setup);
  if (setup.device == Device::cpu && setup.topology.local_rank == 0) {
    const std::string warning = oversubscription_warning(
        setup.node_ranks, setup.threads,
        static_cast<int>(std::max(1u, std::thread::hardware_concurrency())),
        std::getenv("OMP_WAIT_POLICY"));
    if (!warning.empty()) log::warn(warning);
  }
  std::string failure;
  try {
    const RankResources resources = rank_resources(setup.node_ranks);
    check_threads(setup, resources);
    check_model_fits(setup, resources);
  } catch (const Error& error) {
    failure = error.what();
  }
  agree_or_throw(failure.empty(), failure, setup.comm, "the threads and memory");
}

}  // namespace

RunSetup setup_run(const config::TrainCommandLine& command_line, const RunRanks& ranks) {
  RunSetup setup;
  setup.comm = ranks.comm;
  setup.model = ranks.model;
  load_run_params(setup, command_line);
  discover_run_topology(setup, ranks);
  resolve_for_world(setup, ranks);
  const CollectiveDeadline deadline("run set-up (parameters, communicator and device agreement)");
  agree_across_ranks(setup);
  setup.zero_stage = static_cast<int>(setup.params().zero_stage);
  setup.allow_changed_params = command_line.allow_changed_params;
  choose_and_check_threads(setup);
  check_nvme_folder(setup);
  stop_here_if_asked("agreed");
  return setup;
}

model::Recompute recompute_mode(const config::TrainingParams& params) {
  if (params.recompute == "auto") {
    return params.disable_gradient_checkpointing ? model::Recompute::none
                                                 : model::Recompute::selective;
  }
  return model::parse_recompute(params.recompute);
}

model::ModelConfig model_config(const config::ResolvedParams& resolved) {
  const auto& params = resolved.params;
  const std::filesystem::path dir = resolved.base_model.config_dir();
  const bool architecture = !dir.empty();
  auto config =
      architecture ? model::read_folder_config(dir) : model::ModelConfig::gpt2(1, 1, 1, 1, 1);
  const auto n_layer = static_cast<int>(params.n_layer), n_head = static_cast<int>(params.n_head);
  const auto n_embd = static_cast<int>(params.n_embd);
  if (architecture && (n_head != config.n_head || n_embd != config.n_embd) && config.head_dim > 0) {
    config.head_dim = n_embd / n_head;  // from scratch in another shape: heads of n_embd / n_head
  }
  config.n_layer = n_layer;
  config.n_head = n_head;
  config.n_embd = n_embd;
  config.block_size = static_cast<int>(params.n_positions);
  config.vocab_size = static_cast<int>(params.vocab_size);
  config.padded_vocab_size = model::round_up_vocab(config.vocab_size);
  // trainer reward trains a reward model: the score head instead of the LM head, from a causal
  // LM's folder (a new head) or a reward model's.
  const bool reward = params.trainer == "reward";
  AT_CHECK(reward || !config.score_head, (dir / "config.json").string(),
           ": a reward model (*ForSequenceClassification) trains with trainer reward, not ",
           params.trainer);
  config.score_head = reward;
  config.validate();
  return config;
}

CommOptions comm_options(const RunSetup& setup) {
  CommOptions options;
  options.timeout_seconds = static_cast<double>(setup.params().comm_timeout);
  options.device = setup.topology.device;
  return options;
}

data::PrepareOptions prepare_options(const RunSetup& setup) {
  const auto& params = setup.params();
  data::PrepareOptions options;
  options.data_path = params.data_path.empty() ? data_dir() / "tinyshakespeare.txt"
                                               : config::locate_dataset(params.data_path);
  options.output_dir = setup.project_dir / "data";
  options.tokenizer = params.tokenizer;
  options.parse_special_tokens = params.parse_special_tokens;
  options.train_split = params.train_split;
  options.valid_split = params.valid_split;
  options.text_column = params.text_column;
  options.chat_template = params.chat_template == "none" ? "" : params.chat_template;
  options.completions_only = params.train_on_completions_only;
  options.add_eos_token = params.add_eos_token;
  options.threads = setup.threads;
  options.show_progress = setup.topology.rank == 0;
  return options;
}

data::PreferenceOptions preference_options(const RunSetup& setup) {
  const auto& params = setup.params();
  const auto bound = [](int64_t length) { return length > 0 ? static_cast<int>(length) : 0; };
  data::PreferenceOptions options;
  options.prepare = prepare_options(setup);
  options.prompt_column = params.prompt_text_column.empty() ? "prompt" : params.prompt_text_column;
  options.rejected_column =
      params.rejected_text_column.empty() ? "rejected" : params.rejected_text_column;
  options.reward = params.trainer == "reward";
  options.max_prompt_length = bound(params.max_prompt_length);
  options.max_completion_length = bound(params.max_completion_length);
  options.max_length = bound(params.block_size);
  return options;
}

zero::EngineOptions engine_options(const RunSetup& setup) {
  const auto& params = setup.params();
  zero::EngineOptions options;
  options.stage = setup.zero_stage;
  options.reduce_bucket_size = static_cast<size_t>(params.reduce_bucket_size);
  options.prefetch = static_cast<int>(params.stage3_prefetch);
  options.offload_optimizer = zero::parse_offload(params.offload_optimizer_device);
  options.offload_param = zero::parse_offload(params.offload_param_device);
  options.nvme_path = params.nvme_path;
  options.optimizer.kind = parse_optimizer(params.optimizer, "optimizer");
  options.optimizer.weight_decay = static_cast<float>(params.weight_decay);
  options.optimizer.beta1 = static_cast<float>(params.adam_beta1);
  options.optimizer.beta2 = static_cast<float>(params.adam_beta2);
  options.optimizer.eps = static_cast<float>(params.adam_epsilon);
  return options;
}

LrSchedule lr_schedule(const config::TrainingParams& params, long long total_steps) {
  const WarmupShape warmup{params.warmup_ratio, params.warmup_steps, params.warmup_type == "log"};
  const ScheduleKind kind = parse_schedule(params.scheduler, "scheduler");
  return LrSchedule(
      kind, params.lr, total_steps, warmup, params.min_lr_rate,
      parse_scheduler_kwargs(kind, params.lr_scheduler_kwargs, "lr_scheduler_kwargs"));
}

namespace {

// The plan's line on activation checkpointing, with where its mode came from.
std::string recompute_summary(const config::ResolvedParams& resolved) {
  const auto found = resolved.provenance.find("recompute");
  const std::string source = found == resolved.provenance.end() ? "default" : found->second;
  const char* what = "";
  switch (recompute_mode(resolved.params)) {
    case model::Recompute::none:
      what = "every block's kept for backward";
      break;
    case model::Recompute::selective:
      what = "the costly kept, the norms and the activation function recomputed in backward";
      break;
    case model::Recompute::full:
      what = "each block's input kept, the block recomputed in backward";
      break;
  }
  const bool plain = source == "default" || source.starts_with("derived");
  return cat(what, " (recompute ", model::recompute_name(recompute_mode(resolved.params)), ", ",
             plain ? "" : "from ", source, ")\n");
}

}  // namespace

std::string render_plan(const RunSetup& setup, const std::string& checks) {
  const auto& params = setup.params();
  const auto& topology = setup.topology;
  const long long world = topology.world_size;
  const long long global_batch = params.batch_size * params.gradient_accumulation * world;
  // The preference trainers' samples are pairs: two sequences each.
  const bool pairs = config::is_preference_trainer(params.trainer);
  const long long rows = pairs ? 2 : 1;
  const char* unit = pairs ? " pairs (2 sequences each)" : " sequences";
  std::ostringstream out;
  out << "autotrain training plan\n"
      << "  job          " << world << " rank" << (world == 1 ? "" : "s") << " on "
      << topology.num_nodes << " node" << (topology.num_nodes == 1 ? "" : "s") << " ("
      << topology.local_world_size << " per node on rank 0's node), launched by "
      << topology.launcher << "\n"
      << "  devices      "
      << (setup.device == Device::cuda ? cat("GPU ", topology.device, ", ") : std::string("CPU, "))
      << setup.threads << " thread" << (setup.threads == 1 ? "" : "s") << " per rank ("
      << setup.threads_source << "); compute in " << precision_name(setup.precision) << " (device "
      << params.device << ", mixed_precision " << params.mixed_precision << ")\n"
      << "  communicator " << comm_backend_name(setup.comm_backend) << " (comm_backend "
      << params.comm_backend << ")\n"
      << "  ZeRO stage   " << setup.zero_stage << " (" << setup.resolved.provenance.at("zero_stage")
      << ")\n"
      << "  model        " << params.model << ", " << model::summary(model_config(setup.resolved))
      << "\n"
      << "  batch        " << params.batch_size << unit << " x " << params.block_size
      << " tokens per rank and micro-step; x " << params.gradient_accumulation << " accumulation x "
      << world << " ranks = " << global_batch << (pairs ? " pairs" : " sequences") << " ("
      << global_batch * params.block_size * rows << " tokens) per optimizer step"
      << (params.auto_find_batch_size ? "; batch_size from auto_find_batch_size (the largest that "
                                        "fits the memory plan)\n"
                                      : "\n")
      << "  activations  " << recompute_summary(setup.resolved) << "  output       "
      << setup.project_dir.string() << "/\n"
      << checks;
  for (const auto& note : setup.resolved.notes) out << "  note         " << note << "\n";
  out << "\nparameters (value, and where it came from):\n"
      << config::render_params_table(setup.resolved);
  return out.str();
}

}  // namespace autotrain::train
