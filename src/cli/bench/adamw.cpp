// `autotrain bench adamw`: the CPU AdamW step (optim/adamw_kernel.hpp, ZeRO-Offload's step) over
// N parameters against the memory bandwidth STREAM's triad measures in the same process with the
// same threads (memory_bandwidth.hpp: plain, streaming and in-place stores). Each repeat runs the
// three triads and one AdamW step, interleaved so that a machine busy with something else slows
// them all alike. The table gives each one's median, fastest and slowest time and the bandwidth
// it reached, counting 28 bytes an element for AdamW (read p, g, m, v; write p, m, v; 30 with the
// 16-bit copy) and 12 for a triad, and the step's median bandwidth as a share of the fastest
// triad's best (STREAM reports a triad's best time). With --8bit, each repeat also times the
// 8-bit AdamW's step (optim/adamw_8bit.hpp, through Optimizer::step as training runs it) on the
// same number of parameters: 16 bytes an element (read p, g and the two codes; write them) plus the
// blocks' absmaxes.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "autotrain/cli/options.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/mpi.hpp"
#include "autotrain/core/strings.hpp"
#include "autotrain/core/timer.hpp"
#include "autotrain/kernels/threads.hpp"
#include "autotrain/optim/adamw_kernel.hpp"
#include "autotrain/optim/blockwise_8bit.hpp"
#include "autotrain/optim/optimizer.hpp"
#include "kinds.hpp"
#include "memory_bandwidth.hpp"

namespace autotrain::cli {
namespace {

namespace po = boost::program_options;
using nlohmann::json;

struct AdamWBenchOptions {
  double params = 1e8;
  int threads = 0;  // 0: the OpenMP default (OMP_NUM_THREADS, or every core)
  int repeat = 10;
  std::string copy = "none";
  double triad_mib = 0;  // 0: the larger of 256 MiB and the parameters' fp32 array
  bool eight_bit = false;
  bool json = false;
  bool help = false;
};

po::options_description adamw_bench_options(AdamWBenchOptions& o) {
  po::options_description description("autotrain bench adamw [options]");
  description.add_options()  //
      ("params", po::value(&o.params)->value_name("N"),
       "parameters one step updates, e.g. 1e8 (default 1e8; 16 bytes each, 18 with a copy)")  //
      ("threads", po::value(&o.threads)->value_name("T"),
       "OpenMP threads for the triad and the step (default: OMP_NUM_THREADS, or every core)")  //
      ("repeat", po::value(&o.repeat)->value_name("R"),
       "timed repeats of each kernel, after one untimed (default 10)")  //
      ("copy", po::value(&o.copy)->value_name("KIND"),
       "none|bf16|fp16: also write the updated weights as a 16-bit copy (default none)")  //
      ("triad-mib", po::value(&o.triad_mib)->value_name("M"),
       "size of each of the triad's three arrays in MiB (default: the larger of 256 and the "
       "parameters' fp32 array): past the last-level cache, or the triad measures the cache")  //
      ("8bit", po::bool_switch(&o.eight_bit),
       "also time the 8-bit AdamW's step (optimizer adamw_8bit) on the same parameters")  //
      ("json", po::bool_switch(&o.json), "print one JSON document instead of the table")  //
      ("help,h", po::bool_switch(&o.help), "show this help");
  return description;
}

// The arrays of one step: fp32 weights, gradients and moments, and the 16-bit copy if any.
struct AdamWArrays {
  std::unique_ptr<float[]> p, g, m, v;
  std::unique_ptr<std::uint16_t[]> copy;
};

// Filled by the threads that will update them (static blocks, first touch), with weights and
// gradients of a trained model's size (no two pages alike) and zero moments.
AdamWArrays make_arrays(std::size_t n, bool with_copy) {
  AdamWArrays a{
      std::make_unique_for_overwrite<float[]>(n), std::make_unique_for_overwrite<float[]>(n),
      std::make_unique_for_overwrite<float[]>(n), std::make_unique_for_overwrite<float[]>(n),
      with_copy ? std::make_unique_for_overwrite<std::uint16_t[]>(n) : nullptr};
#pragma omp parallel for schedule(static)
  for (std::size_t i = 0; i < n; ++i) {
    a.p[i] = 0.02f * unit_noise(2 * i) - 0.01f;
    a.g[i] = 1e-3f * unit_noise(2 * i + 1) - 5e-4f;
    a.m[i] = 0.0f;
    a.v[i] = 0.0f;
    if (with_copy) a.copy[i] = 0;
  }
  return a;
}

void adamw_step(AdamWArrays& a, std::size_t n, const std::string& copy, long long step) {
  AdamWStepArgs args;
  args.lr = 1e-4f;
  args.weight_decay = 0.01f;
  args.step = step;
  if (copy == "bf16") {
    adamw_update_bf16(a.p.get(), a.g.get(), a.m.get(), a.v.get(), a.copy.get(), n, args);
  } else if (copy == "fp16") {
    adamw_update_fp16(a.p.get(), a.g.get(), a.m.get(), a.v.get(), a.copy.get(), n, args);
  } else {
    adamw_update(a.p.get(), a.g.get(), a.m.get(), a.v.get(), n, args);
  }
}

// The vectors adamw_update uses: every target of a build is compiled for the same -march.
constexpr const char* kVectors =
#if defined(__AVX512F__)
    "AVX-512";
#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
    "AVX2";
#else
    "none (portable loop)";
#endif

// Below this, the triad's three arrays could sit in a large last-level cache.
constexpr std::size_t kMinTriadElements = std::size_t{1} << 26;  // 256 MiB an array

struct KernelRow {
  std::string name;
  std::size_t elements = 0;
  double bytes_per_element = 0;
  RepeatTimes times;
  double gbps(double seconds) const {
    return static_cast<double>(elements) * bytes_per_element / seconds / 1e9;
  }
};

struct AdamWBenchResult {
  std::size_t params = 0;
  int threads = 0;
  int repeat = 0;
  std::string copy;
  std::string cpu;
  // The triads (TriadArrays::kKinds), adamw_update, then with --8bit adamw_8bit_update.
  std::vector<KernelRow> rows;
  static constexpr std::size_t kTriads = std::size(TriadArrays::kKinds);
  const KernelRow& adamw() const { return rows[kTriads]; }
  // The best triad at its best, the rate STREAM reports: what the memory gives a kernel that
  // streams. The step's median is held against it, so noise counts against the step.
  const KernelRow& bound() const {
    const auto faster = [](const KernelRow& a, const KernelRow& b) {
      return a.gbps(a.times.min_s) < b.gbps(b.times.min_s);
    };
    return *std::max_element(rows.begin(), rows.begin() + kTriads, faster);
  }
  double bound_gbps() const { return bound().gbps(bound().times.min_s); }
  double fraction() const { return adamw().gbps(adamw().times.median_s) / bound_gbps(); }
};

std::string cpu_model_name() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) != 0) continue;
    const std::size_t colon = line.find(':');
    if (colon != std::string::npos) return trim(line.substr(colon + 1));
  }
  return "unknown CPU";
}

void check_options(const AdamWBenchOptions& o) {
  if (!(o.params >= 1 && o.params <= 1e13 && o.params == std::floor(o.params)))
    throw CollectiveError(cat("bench adamw: --params ", o.params,
                              " must be a whole number of parameters, at least 1"));
  if (o.threads < 0)
    throw CollectiveError(cat("bench adamw: --threads ", o.threads, " must be at least 1"));
  if (o.repeat < 1)
    throw CollectiveError(cat("bench adamw: --repeat ", o.repeat, " must be at least 1"));
  if (o.triad_mib < 0 || o.triad_mib > 1e7)
    throw CollectiveError(cat("bench adamw: --triad-mib ", o.triad_mib,
                              " is not a size in MiB (or 0, the default size)"));
  if (o.copy != "none" && o.copy != "bf16" && o.copy != "fp16")
    throw CollectiveError(cat("bench adamw: --copy '", o.copy, "' is not none, bf16 or fp16"));
}

AdamWBenchResult run_adamw_bench(const AdamWBenchOptions& o) {
  if (o.threads > 0) kernels::set_num_threads(o.threads);
  const auto n = static_cast<std::size_t>(o.params);
  const bool with_copy = o.copy != "none";
  const auto chosen = static_cast<std::size_t>(o.triad_mib * (1 << 20) / sizeof(float));
  TriadArrays triad(o.triad_mib > 0 ? std::max<std::size_t>(chosen, 1)
                                    : std::max(n, kMinTriadElements));
  AdamWArrays arrays = make_arrays(n, with_copy);
  constexpr std::size_t kTriads = AdamWBenchResult::kTriads;
  // --8bit: its own weights (the same values), the same gradients; its state is allocated by the
  // untimed first step.
  std::vector<float> eight_bit_params;
  std::unique_ptr<Optimizer> eight_bit;
  if (o.eight_bit) {
    eight_bit_params.assign(arrays.p.get(), arrays.p.get() + n);
    OptimizerSettings settings;
    settings.kind = OptimizerKind::adamw_8bit;
    settings.weight_decay = 0.01f;
    eight_bit = std::make_unique<Optimizer>(settings, std::vector<ParamSegment>{{0, n, true}});
  }
  // Each triad, the step, then the 8-bit step.
  std::vector<std::vector<double>> seconds(kTriads + (o.eight_bit ? 2 : 1));
  for (int r = 0; r <= o.repeat; ++r) {  // repeat 0 is the untimed one
    std::vector<double> once;
    for (TriadArrays::Kind kind : TriadArrays::kKinds) once.push_back(triad.time_once(kind));
    const Timer timer;
    adamw_step(arrays, n, o.copy, r + 1);
    once.push_back(timer.seconds());
    if (eight_bit) {
      const Timer eight_bit_timer;
      eight_bit->step(eight_bit_params, std::span<const float>(arrays.g.get(), n), 0, 1e-4f, 1.0f);
      once.push_back(eight_bit_timer.seconds());
    }
    for (std::size_t k = 0; r > 0 && k < once.size(); ++k) seconds[k].push_back(once[k]);
  }
  AdamWBenchResult result{n, kernels::num_threads(), o.repeat, o.copy, cpu_model_name(), {}};
  for (std::size_t k = 0; k < kTriads; ++k) {
    result.rows.push_back({TriadArrays::name(TriadArrays::kKinds[k]), triad.elements(),
                           TriadArrays::kBytesPerElement, summarise(seconds[k])});
  }
  result.rows.push_back({"adamw_update", n, with_copy ? 30.0 : 28.0, summarise(seconds[kTriads])});
  if (o.eight_bit) {
    result.rows.push_back(
        {"adamw_8bit_update", n, 16.0 + 16.0 / kQuantBlock, summarise(seconds[kTriads + 1])});
  }
  return result;
}

void print_adamw_bench(const AdamWBenchResult& r) {
  const double state_bytes = static_cast<double>(r.params) * (r.copy == "none" ? 16 : 18);
  std::printf(
      "bench adamw: %zu parameters (%s of state), copy %s, %d thread(s), %d repeats after "
      "1 untimed; %s, vectors %s\n",
      r.params, human_bytes(state_bytes).c_str(), r.copy.c_str(), r.threads, r.repeat,
      r.cpu.c_str(), kVectors);
  std::printf("%-24s %11s %10s %11s %9s %9s %12s %10s\n", "kernel", "elements", "bytes/elem",
              "median(ms)", "min(ms)", "max(ms)", "GB/s median", "GB/s best");
  for (const KernelRow& row : r.rows) {
    std::printf("%-24s %11zu %10.0f %11.2f %9.2f %9.2f %12.1f %10.1f\n", row.name.c_str(),
                row.elements, row.bytes_per_element, row.times.median_s * 1e3,
                row.times.min_s * 1e3, row.times.max_s * 1e3, row.gbps(row.times.median_s),
                row.gbps(row.times.min_s));
  }
  std::printf("adamw_update's median: %.0f%% of the memory bandwidth (the best %s, %.1f GB/s)\n",
              100.0 * r.fraction(), r.bound().name.c_str(), r.bound_gbps());
  if (r.rows.size() > AdamWBenchResult::kTriads + 1) {
    const KernelRow& eight_bit = r.rows.back();
    std::printf(
        "adamw_8bit_update's median: %.2fx adamw_update's time, with %.2f bytes of optimizer "
        "state a parameter against 8\n",
        eight_bit.times.median_s / r.adamw().times.median_s,
        optimizer_state_bytes_per_element(OptimizerKind::adamw_8bit));
  }
  if (state_bytes < 256.0 * (1 << 20))
    std::printf(
        "note: %s of state may sit in the caches; the step's figures then measure them, "
        "not the memory\n",
        human_bytes(state_bytes).c_str());
}

json adamw_bench_json(const AdamWBenchResult& r) {
  json kernels = json::array();
  for (const KernelRow& row : r.rows) {
    kernels.push_back({{"kernel", row.name},
                       {"elements", row.elements},
                       {"bytes_per_element", row.bytes_per_element},
                       {"median_s", row.times.median_s},
                       {"min_s", row.times.min_s},
                       {"max_s", row.times.max_s},
                       {"gbps_median", row.gbps(row.times.median_s)},
                       {"gbps_best", row.gbps(row.times.min_s)}});
  }
  return {{"benchmark", "adamw"},
          {"params", r.params},
          {"threads", r.threads},
          {"repeat", r.repeat},
          {"copy", r.copy},
          {"cpu", r.cpu},
          {"vectors", kVectors},
          {"kernels", kernels},
          {"bandwidth_bound_gbps", r.bound_gbps()},
          {"fraction_of_bound", r.fraction()}};
}

}  // namespace

int run_bench_adamw(const std::vector<std::string>& args, MpiSession& mpi) {
  AdamWBenchOptions options;
  const po::options_description description = adamw_bench_options(options);
  parse_command_options("bench adamw", description, args);
  if (options.help) {
    if (mpi.rank() == 0) std::cout << description << "\n";
    return 0;
  }
  check_options(options);
  if (mpi.size() > 1)
    throw CollectiveError(
        cat("bench adamw: times one process (world size ", mpi.size(), "); run it without mpirun"));
  const AdamWBenchResult result = run_adamw_bench(options);
  if (options.json) {
    std::cout << adamw_bench_json(result).dump(2) << "\n";
  } else {
    print_adamw_bench(result);
  }
  return 0;
}

}  // namespace autotrain::cli
