// `autotrain bench comm`: an nccl-tests clone for our communicators. For each backend and
// collective it times a range of sizes, out of place and in place where the Communicator
// interface has the form (comm_collective.hpp), and prints nccl-tests' table:
//
//   size count type redop root | time algbw busbw #wrong (out-of-place) | the same (in-place)
//
// closed by "# Avg bus bandwidth    : X", the mean busbw over every size and placement timed,
// or one JSON document with the same figures. redop is "none" and root -1 where the collective
// has none, as in nccl-tests. `--backend raw-mpi` is a plain blocking MPI loop
// (comm_raw_mpi.hpp), the reference for our mpi backend.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "autotrain/cli/options.hpp"
#include "autotrain/comm/backend.hpp"
#include "autotrain/comm/communicator.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/mpi.hpp"
#include "autotrain/core/strings.hpp"
#include "autotrain/launch/discover.hpp"
#include "comm_collective.hpp"
#include "comm_raw_mpi.hpp"
#include "kinds.hpp"

namespace autotrain::cli {
namespace {

namespace po = boost::program_options;
using nlohmann::json;

struct CommBenchOptions {
  std::string backends = "auto";
  std::string ops = "allreduce";
  std::string dtype = "fp32";
  std::string redop = "sum";
  std::string min_bytes = "8";
  std::string max_bytes = "256M";
  double factor = 2;
  int iters = 20;
  int warmup_iters = 5;
  int rounds = 1;
  int root = 0;
  double timeout = 600;
  bool check = false;
  bool json = false;
  bool help = false;
};

po::options_description comm_bench_options(CommBenchOptions& o) {
  po::options_description description("autotrain bench comm [options]");
  description.add_options()  //
      ("backend", po::value(&o.backends)->value_name("LIST"),
       "auto|mpi|gloo|nccl|raw-mpi, or a comma-separated list timed one after the other; raw-mpi "
       "is a plain blocking MPI loop, the reference for our mpi backend (default auto)")  //
      ("op", po::value(&o.ops)->value_name("LIST"),
       "allreduce|reduce_scatter|allgather|broadcast|all, or a comma-separated list (default "
       "allreduce)")  //
      ("dtype", po::value(&o.dtype)->value_name("T"),
       "fp32|bf16|fp16|int32|int64 (default fp32)")  //
      ("redop", po::value(&o.redop)->value_name("OP"),
       "sum|avg|max, for allreduce and reduce_scatter (default sum)")  //
      ("min-bytes", po::value(&o.min_bytes)->value_name("N"),
       "smallest size, K/M/G suffixes (default 8)")                                           //
      ("max-bytes", po::value(&o.max_bytes)->value_name("N"), "largest size (default 256M)")  //
      ("factor", po::value(&o.factor)->value_name("F"),
       "size multiplier between rows (default 2)")                                               //
      ("iters", po::value(&o.iters)->value_name("N"), "timed iterations per size (default 20)")  //
      ("warmup-iters", po::value(&o.warmup_iters)->value_name("N"),
       "untimed iterations first (default 5)")  //
      ("rounds", po::value(&o.rounds)->value_name("R"),
       "time each size R times and keep the fastest round: steadier figures on a busy machine "
       "(default 1)")                                                              //
      ("root", po::value(&o.root)->value_name("R"), "broadcast root (default 0)")  //
      ("comm-timeout", po::value(&o.timeout)->value_name("S"),
       "collective timeout in seconds (default 600)")  //
      ("check", po::bool_switch(&o.check),
       "fill inputs with rank-dependent values and count wrong output elements against a "
       "reference computed independently, in each placement")                          //
      ("json", po::bool_switch(&o.json), "print one JSON document instead of tables")  //
      ("help,h", po::bool_switch(&o.help), "show this help");
  return description;
}

// "256M" -> 268435456. K, M, G are binary (as in nccl-tests).
std::size_t parse_size(const std::string& text, std::string_view flag) {
  std::size_t used = 0;
  double value = -1;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  const std::string suffix = text.substr(used);
  double scale = 1;
  if (suffix == "K" || suffix == "k" || suffix == "KiB") scale = 1024.0;
  if (suffix == "M" || suffix == "m" || suffix == "MiB") scale = 1024.0 * 1024;
  if (suffix == "G" || suffix == "g" || suffix == "GiB") scale = 1024.0 * 1024 * 1024;
  if (used == 0 || !std::isfinite(value) || value < 0 ||
      (scale == 1 && !suffix.empty() && suffix != "B")) {
    throw CollectiveError(
        cat("bench comm: ", flag, " '", text,
            "' is not a size (expected bytes, optionally with K, M or G, e.g. 256M)"));
  }
  // 2^63 bytes: far past any memory, and below SIZE_MAX, so the conversion is exact.
  if (value * scale >= 0x1p63) {
    throw CollectiveError(cat("bench comm: ", flag, " '", text, "' is larger than any buffer"));
  }
  return static_cast<std::size_t>(value * scale);
}

std::vector<Collective> parse_collectives(const std::string& text) {
  std::vector<Collective> result;
  std::vector<std::string> names;
  for (Collective op : kAllCollectives) names.emplace_back(collective_name(op));
  for (const std::string& item : split(text, ',')) {
    const std::string name = to_snake_case(trim(item));
    if (name == "all") {
      result.assign(std::begin(kAllCollectives), std::end(kAllCollectives));
      continue;
    }
    const auto found = std::find(names.begin(), names.end(), name);
    if (found == names.end()) {
      throw CollectiveError(
          cat("bench comm: --op '", item, "' is not a collective", did_you_mean(name, names),
              " (expected allreduce, reduce_scatter, allgather, broadcast or all)"));
    }
    result.push_back(kAllCollectives[found - names.begin()]);
  }
  return result;
}

// The checked options: what every table of the run shares.
struct CommBenchPlan {
  std::vector<std::string> backends;
  std::vector<Collective> collectives;
  CollectiveSettings settings;
  std::vector<std::size_t> sizes;  // bytes, min to max
  std::size_t max_bytes = 0;
  double timeout = 600;
  bool json = false;
};

// Turns what the library's parsers throw into the collective error every rank meets alike.
template <typename Parse>
auto collectively(Parse parse) {
  try {
    return parse();
  } catch (const CollectiveError&) {
    throw;
  } catch (const Error& error) {
    throw CollectiveError(error.what());
  }
}

CollectiveSettings collective_settings(const CommBenchOptions& options, int world_size) {
  if (options.iters < 1 || options.warmup_iters < 0 || options.rounds < 1) {
    throw CollectiveError(cat("bench comm: --iters ", options.iters, " and --rounds ",
                              options.rounds, " must be at least 1 and --warmup-iters ",
                              options.warmup_iters, " at least 0"));
  }
  if (options.root < 0 || options.root >= world_size) {
    throw CollectiveError(
        cat("bench comm: --root ", options.root, " is not a rank (0..", world_size - 1, ")"));
  }
  CollectiveSettings settings;
  settings.dtype = collectively([&] { return parse_dtype(options.dtype, "bench comm: --dtype"); });
  settings.redop =
      collectively([&] { return parse_reduce_op(options.redop, "bench comm: --redop"); });
  if ((settings.dtype == DType::int32 || settings.dtype == DType::int64) &&
      settings.redop == ReduceOp::avg) {
    throw CollectiveError(cat("bench comm: --redop avg needs a floating-point --dtype, got ",
                              dtype_name(settings.dtype)));
  }
  settings.root = options.root;
  settings.iters = options.iters;
  settings.warmup_iters = options.warmup_iters;
  settings.rounds = options.rounds;
  settings.check = options.check;
  return settings;
}

CommBenchPlan plan_comm_bench(const CommBenchOptions& options, int world_size) {
  CommBenchPlan plan;
  plan.settings = collective_settings(options, world_size);
  plan.collectives = parse_collectives(options.ops);
  for (const std::string& backend : split(options.backends, ','))
    plan.backends.push_back(trim(backend));
  if (!(options.factor > 1)) {  // NaN too
    throw CollectiveError(cat("bench comm: --factor ", options.factor, " must be greater than 1"));
  }
  const std::size_t min_bytes =
      std::max<std::size_t>(parse_size(options.min_bytes, "--min-bytes"), 1);
  plan.max_bytes = parse_size(options.max_bytes, "--max-bytes");
  if (plan.max_bytes < min_bytes) {
    throw CollectiveError(cat("bench comm: --max-bytes ", options.max_bytes,
                              " is below --min-bytes ", options.min_bytes));
  }
  for (double size = static_cast<double>(min_bytes);
       size <= static_cast<double>(plan.max_bytes) * 1.000001; size *= options.factor) {
    plan.sizes.push_back(std::min(static_cast<std::size_t>(size), plan.max_bytes));
  }
  plan.timeout = options.timeout;
  plan.json = options.json;
  return plan;
}

struct BenchCommunicator {
  std::unique_ptr<Communicator> comm;
  bool on_device = false;  // its buffers are device memory (nccl)
};

BenchCommunicator open_communicator(const std::string& backend_name, const CommBenchPlan& plan) {
  if (backend_name == "raw-mpi") {
    // The largest count one call passes: the whole buffer, or one rank's part when every
    // collective timed is a reduce_scatter or an allgather.
    std::size_t max_count = plan.max_bytes / dtype_size(plan.settings.dtype);
    if (std::none_of(plan.collectives.begin(), plan.collectives.end(), [](Collective op) {
          return op == Collective::allreduce || op == Collective::broadcast;
        })) {
      max_count /= static_cast<std::size_t>(world_size());
    }
    check_raw_mpi_supports(plan.settings.dtype, plan.settings.redop, max_count);
    return {make_raw_mpi_communicator(MPI_COMM_WORLD), false};
  }
  const CommBackend requested = collectively([&] {
    try {
      return parse_comm_backend(backend_name, "bench comm: --backend");
    } catch (const Error& error) {
      throw Error(cat(error.what(), " or raw-mpi"));
    }
  });
  DiscoverOptions discover;
  discover.want_gpu = requested == CommBackend::nccl;
  const Topology topology = discover_topology(MPI_COMM_WORLD, discover);
  const CommBackend backend = resolve_comm_backend(requested, topology);
  CommOptions comm_options;
  comm_options.timeout_seconds = plan.timeout;
  comm_options.device = topology.device;
  return {make_communicator(backend, MPI_COMM_WORLD, comm_options), backend == CommBackend::nccl};
}

std::string redop_label(Collective op, const CollectiveSettings& settings) {
  return reduces(op) ? std::string(reduce_op_name(settings.redop)) : "none";
}

int root_label(Collective op, const CollectiveSettings& settings) {
  return op == Collective::broadcast ? settings.root : -1;
}

// The busbw mean and the wrong elements of one table (one backend, one collective).
struct TableSummary {
  double busbw_sum = 0;
  int timed = 0;
  long long wrong = 0;

  void add(const std::optional<PlacementResult>& result) {
    if (!result) return;
    busbw_sum += result->busbw;
    ++timed;
    if (result->wrong > 0) wrong += result->wrong;
  }
  double average_busbw() const { return timed > 0 ? busbw_sum / timed : 0; }
};

void print_table_header(std::string_view backend, Collective op, int world_size,
                        const CollectiveSettings& settings) {
  std::string what = cat("dtype ", dtype_name(settings.dtype));
  if (reduces(op)) what += cat(", redop ", reduce_op_name(settings.redop));
  if (op == Collective::broadcast) what += cat(", root ", settings.root);
  std::printf("# %s on %s, %d ranks, %s, %d iters after %d warm-up, best of %d rounds\n",
              std::string(collective_name(op)).c_str(), std::string(backend).c_str(), world_size,
              what.c_str(), settings.iters, settings.warmup_iters, settings.rounds);
  if (!missing_placement_note(op).empty())
    std::printf("# %s\n", std::string(missing_placement_note(op)).c_str());
  std::printf("#\n");
  std::printf("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place\n",
              "", "", "", "", "");
  std::printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s\n", "size",
              "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw",
              "busbw", "#wrong");
  std::printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s\n", "(B)",
              "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)",
              "");
}

// time, algbw, busbw, #wrong as nccl-tests prints them; "-" where the placement was not timed.
void print_placement(const std::optional<PlacementResult>& result) {
  if (!result) {
    std::printf("  %7s  %6s  %6s  %5s", "-", "-", "-", "-");
    return;
  }
  const double us = result->time_us;
  char time[32];
  std::snprintf(time, sizeof time, "%7.*f", us >= 10000 ? 0 : us >= 100 ? 1 : 2, us);
  const std::string wrong = result->wrong >= 0 ? std::to_string(result->wrong) : "N/A";
  std::printf("  %7s  %6.2f  %6.2f  %5s", time, result->algbw, result->busbw, wrong.c_str());
}

void print_row(const SizeResult& row, Collective op, const CollectiveSettings& settings) {
  std::printf("%12zu  %12zu  %8s  %6s  %6d", row.bytes, row.count,
              std::string(dtype_name(settings.dtype)).c_str(), redop_label(op, settings).c_str(),
              root_label(op, settings));
  print_placement(row.out_of_place);
  print_placement(row.in_place);
  std::printf("\n");
  std::fflush(stdout);
}

void print_table_footer(const TableSummary& summary, bool checked) {
  if (checked) {
    std::printf("# Out of bounds values : %lld %s\n", summary.wrong,
                summary.wrong > 0 ? "FAILED" : "OK");
  }
  std::printf("# Avg bus bandwidth    : %g\n#\n", summary.average_busbw());
  std::fflush(stdout);
}

json placement_json(const std::optional<PlacementResult>& result) {
  if (!result) return nullptr;
  return {{"time_us", result->time_us},
          {"algbw_gbps", result->algbw},
          {"busbw_gbps", result->busbw},
          {"wrong", result->wrong >= 0 ? json(result->wrong) : json(nullptr)}};
}

json row_json(std::string_view backend, Collective op, int world_size, const SizeResult& row,
              const CollectiveSettings& settings) {
  return {{"backend", backend},
          {"op", collective_name(op)},
          {"world_size", world_size},
          {"size_bytes", row.bytes},
          {"count", row.count},
          {"dtype", dtype_name(settings.dtype)},
          {"redop", redop_label(op, settings)},
          {"root", root_label(op, settings)},
          {"out_of_place", placement_json(row.out_of_place)},
          {"in_place", placement_json(row.in_place)}};
}

// Times one collective over every size on one communicator; rank 0 prints the table (or adds
// the rows to `rows`).
TableSummary run_table(const BenchCommunicator& bench_comm, Collective op,
                       const CommBenchPlan& plan, json& rows) {
  Communicator& comm = *bench_comm.comm;
  const bool talks = comm.rank() == 0;
  CollectiveBench bench(comm, op, plan.settings, plan.max_bytes, bench_comm.on_device);
  if (talks && !plan.json) print_table_header(comm.name(), op, comm.size(), plan.settings);
  TableSummary summary;
  for (std::size_t bytes : plan.sizes) {
    const SizeResult row = bench.run(bytes);
    if (row.count == 0) continue;
    summary.add(row.out_of_place);
    summary.add(row.in_place);
    if (!talks) continue;
    if (plan.json) {
      rows.push_back(row_json(comm.name(), op, comm.size(), row, plan.settings));
    } else {
      print_row(row, op, plan.settings);
    }
  }
  if (talks && !plan.json) print_table_footer(summary, plan.settings.check);
  return summary;
}

}  // namespace

int run_bench_comm(const std::vector<std::string>& args, MpiSession& mpi) {
  CommBenchOptions options;
  const po::options_description description = comm_bench_options(options);
  parse_command_options("bench comm", description, args);
  if (options.help) {
    if (mpi.rank() == 0) std::cout << description << "\n";
    return 0;
  }
  const CommBenchPlan plan = plan_comm_bench(options, mpi.size());
  json rows = json::array();
  json tables = json::array();
  long long total_wrong = 0;
  for (const std::string& backend : plan.backends) {
    const BenchCommunicator comm = open_communicator(backend, plan);
    for (Collective op : plan.collectives) {
      const TableSummary summary = run_table(comm, op, plan, rows);
      total_wrong += summary.wrong;
      tables.push_back({{"backend", comm.comm->name()},
                        {"op", collective_name(op)},
                        {"avg_busbw_gbps", summary.average_busbw()},
                        {"wrong", plan.settings.check ? json(summary.wrong) : json(nullptr)}});
    }
  }
  if (mpi.rank() == 0 && plan.json) {
    const json document = {
        {"benchmark", "comm"}, {"world_size", mpi.size()}, {"results", rows}, {"tables", tables}};
    std::cout << document.dump(2) << "\n";
  }
  if (total_wrong > 0) {
    throw CollectiveError(
        cat("bench comm: --check found ", total_wrong, " wrong elements (see #wrong)"));
  }
  return 0;
}

}  // namespace autotrain::cli
