// `autotrain bench <kind>`: benchmarks that run under mpirun like training. `bench comm` times
// the communicator's collectives over a range of sizes and prints the table nccl-tests users
// know (size, count, type, redop, root, time, algbw, busbw, #wrong), or JSON.
//
// busbw = algbw x 2(n-1)/n for allreduce, (n-1)/n for reduce_scatter and allgather, 1 for
// broadcast: the per-link traffic of the optimal ring algorithm, comparable across rank counts.
// `size` is the whole buffer (the unscattered input of reduce_scatter, the gathered output of
// allgather), as in nccl-tests.
//
// `bench train` runs real optimizer steps of a training config (train/bench_train.hpp) and prints
// tokens/s, the forward/backward/optimizer split with the communication wait, GFLOP/s, MFU
// against a measured sgemm peak, and each rank's memory.
#include <mpi.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "autotrain/cli/commands.hpp"
#include "autotrain/comm/backend.hpp"
#include "autotrain/comm/communicator.hpp"
#include "autotrain/config/command_line.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/mpi.hpp"
#include "autotrain/core/strings.hpp"
#include "autotrain/core/timer.hpp"
#include "autotrain/kernels/threads.hpp"
#include "autotrain/launch/discover.hpp"
#include "autotrain/train/bench_train.hpp"
#include "autotrain/train/run_setup.hpp"

#ifdef AUTOTRAIN_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace autotrain::cli {
namespace {

namespace po = boost::program_options;
using nlohmann::json;

enum class Collective { allreduce, reduce_scatter, allgather, broadcast };
constexpr Collective kAllCollectives[] = {Collective::allreduce, Collective::reduce_scatter,
                                          Collective::allgather, Collective::broadcast};

std::string_view collective_name(Collective op) {
  switch (op) {
    case Collective::allreduce:
      return "allreduce";
    case Collective::reduce_scatter:
      return "reduce_scatter";
    case Collective::allgather:
      return "allgather";
    case Collective::broadcast:
      return "broadcast";
  }
  return "?";
}

double bus_factor(Collective op, int n) {
  switch (op) {
    case Collective::allreduce:
      return 2.0 * (n - 1) / n;
    case Collective::reduce_scatter:
    case Collective::allgather:
      return static_cast<double>(n - 1) / n;
    case Collective::broadcast:
      return 1.0;
  }
  return 1.0;
}

// "256M" -> 268435456. K, M, G are binary (as in nccl-tests).
size_t parse_size(const std::string& text, std::string_view flag) {
  size_t used = 0;
  double value = -1;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  std::string suffix = text.substr(used);
  double scale = 1;
  if (suffix == "K" || suffix == "k" || suffix == "KiB") scale = 1024.0;
  if (suffix == "M" || suffix == "m" || suffix == "MiB") scale = 1024.0 * 1024;
  if (suffix == "G" || suffix == "g" || suffix == "GiB") scale = 1024.0 * 1024 * 1024;
  if (used == 0 || value < 0 || (scale == 1 && !suffix.empty() && suffix != "B")) {
    throw CollectiveError(
        cat("bench comm: ", flag, " '", text,
            "' is not a size (expected bytes, optionally with K, M or G, e.g. 256M)"));
  }
  return static_cast<size_t>(value * scale);
}

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
       "fp32|bf16|fp16|int32|int64 (default fp32)")                                  //
      ("redop", po::value(&o.redop)->value_name("OP"), "sum|avg|max (default sum)")  //
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
       "reference computed independently")                                             //
      ("json", po::bool_switch(&o.json), "print one JSON document instead of tables")  //
      ("help,h", po::bool_switch(&o.help), "show this help");
  return description;
}

CommBenchOptions parse_comm_bench_options(const std::vector<std::string>& args) {
  CommBenchOptions options;
  const po::options_description description = comm_bench_options(options);
  try {
    po::variables_map values;
    po::store(po::command_line_parser(args).options(description).run(), values);
    po::notify(values);
  } catch (const po::unknown_option& error) {
    const std::vector<std::string> flags = {
        "--backend",   "--op",           "--dtype", "--redop",        "--min-bytes",
        "--max-bytes", "--factor",       "--iters", "--warmup-iters", "--rounds",
        "--root",      "--comm-timeout", "--check", "--json",         "--help"};
    throw CollectiveError(cat("bench comm: unknown option '", error.get_option_name(), "'",
                              did_you_mean(error.get_option_name(), flags),
                              "; run 'autotrain bench comm --help'"));
  } catch (const po::error& error) {
    throw CollectiveError(cat("bench comm: ", error.what(), "; run 'autotrain bench comm --help'"));
  }
  if (options.factor <= 1) {
    throw CollectiveError(cat("bench comm: --factor ", options.factor, " must be greater than 1"));
  }
  if (options.iters < 1 || options.warmup_iters < 0 || options.rounds < 1) {
    throw CollectiveError(
        "bench comm: --iters and --rounds must be at least 1 and --warmup-iters at least 0");
  }
  return options;
}

// The reference: a plain blocking MPI loop, nothing of ours in the way. Each call completes
// before it returns, so its handles are empty.
class RawMpiCommunicator final : public Communicator {
 public:
  explicit RawMpiCommunicator(MPI_Comm parent) {
    AT_MPI_CHECK(MPI_Comm_dup(parent, &comm_));
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  ~RawMpiCommunicator() override { MPI_Comm_free(&comm_); }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string_view name() const override { return "raw-mpi"; }

  CommHandle allreduce_async(void* data, size_t count, DType dtype, ReduceOp op) override {
    AT_MPI_CHECK(
        MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(count), type(dtype), mpi_op(op), comm_));
    return {};
  }
  CommHandle reduce_scatter_async(const void* input, void* output, size_t part, DType dtype,
                                  ReduceOp op) override {
    AT_MPI_CHECK(MPI_Reduce_scatter_block(input, output, static_cast<int>(part), type(dtype),
                                          mpi_op(op), comm_));
    return {};
  }
  CommHandle allgather_async(const void* input, void* output, size_t part, DType dtype) override {
    AT_MPI_CHECK(MPI_Allgather(input, static_cast<int>(part), type(dtype), output,
                               static_cast<int>(part), type(dtype), comm_));
    return {};
  }
  CommHandle broadcast_async(void* data, size_t count, DType dtype, int root) override {
    AT_MPI_CHECK(MPI_Bcast(data, static_cast<int>(count), type(dtype), root, comm_));
    return {};
  }
  CommHandle barrier_async() override {
    AT_MPI_CHECK(MPI_Barrier(comm_));
    return {};
  }

  static void check_supported(DType dtype, ReduceOp op) {
    if (dtype == DType::bf16 || dtype == DType::fp16) {
      throw CollectiveError(
          cat("bench comm: raw-mpi has no ", dtype_name(dtype),
              " type (MPI lacks 16-bit floats); use --dtype fp32, int32 or int64"));
    }
    if (op == ReduceOp::avg)
      throw CollectiveError("bench comm: raw-mpi has no avg; use --redop sum or max");
  }

 private:
  static MPI_Datatype type(DType dtype) {
    return dtype == DType::fp32 ? MPI_FLOAT : dtype == DType::int32 ? MPI_INT32_T : MPI_INT64_T;
  }
  static MPI_Op mpi_op(ReduceOp op) { return op == ReduceOp::max ? MPI_MAX : MPI_SUM; }
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
};

// Host memory, or device memory for nccl; filled and read through host copies.
class BenchBuffer {
 public:
  BenchBuffer(size_t bytes, bool on_device) : bytes_(bytes), host_(bytes) {
    if (!on_device) return;
#ifdef AUTOTRAIN_HAVE_CUDA
    if (cudaMalloc(&device_, std::max<size_t>(bytes, 1)) != cudaSuccess) {
      throw Error(
          cat("bench comm: cudaMalloc of ", human_bytes(static_cast<double>(bytes)), " failed"));
    }
#endif
  }
  ~BenchBuffer() {
#ifdef AUTOTRAIN_HAVE_CUDA
    if (device_ != nullptr) cudaFree(device_);
#endif
  }
  BenchBuffer(const BenchBuffer&) = delete;
  BenchBuffer& operator=(const BenchBuffer&) = delete;

  void* data() {
    return device_ != nullptr ? device_ : host_.data();
  }
  std::byte* host() {
    return host_.data();
  }
  void upload(size_t bytes) {
    copy(device_, host_.data(), bytes, true);
  }
  void download(size_t bytes) {
    copy(host_.data(), device_, bytes, false);
  }
  void zero() {
    std::fill(host_.begin(), host_.end(), std::byte{0});
    upload(bytes_);
  }

 private:
  static void copy([[maybe_unused]] void* to, [[maybe_unused]] const void* from,
                   [[maybe_unused]] size_t bytes, [[maybe_unused]] bool up) {
#ifdef AUTOTRAIN_HAVE_CUDA
    if (to == nullptr || from == nullptr) return;
    cudaMemcpy(to, from, bytes, up ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost);
#endif
  }
  size_t bytes_;
  std::vector<std::byte> host_;
  void* device_ = nullptr;
};

// Rank-dependent small integers: exact in every dtype, and so are their sums over many ranks.
double check_value(int rank, size_t i) {
  return static_cast<double>(static_cast<int>((i * 7 + static_cast<size_t>(rank) * 3) % 11) - 3);
}

void store_value(std::byte* base, size_t i, DType dtype, double value) {
  std::byte* at = base + i * dtype_size(dtype);
  auto put = [at](auto typed) { std::memcpy(at, &typed, sizeof typed); };
  switch (dtype) {
    case DType::fp32:
      return put(static_cast<float>(value));
    case DType::bf16:
      return put(float_to_bf16(static_cast<float>(value)));
    case DType::fp16:
      return put(float_to_fp16(static_cast<float>(value)));
    case DType::int32:
      return put(static_cast<int32_t>(value));
    case DType::int64:
      return put(static_cast<int64_t>(value));
  }
}

double load_value(const std::byte* base, size_t i, DType dtype) {
  const std::byte* at = base + i * dtype_size(dtype);
  auto get = [at]<typename T>(T typed) {
    std::memcpy(&typed, at, sizeof typed);
    return typed;
  };
  switch (dtype) {
    case DType::fp32:
      return get(0.0f);
    case DType::bf16:
      return bf16_to_float(get(uint16_t{0}));
    case DType::fp16:
      return fp16_to_float(get(uint16_t{0}));
    case DType::int32:
      return get(int32_t{0});
    case DType::int64:
      return static_cast<double>(get(int64_t{0}));
  }
  return NAN;
}

double expected_reduction(ReduceOp op, int world_size, size_t i) {
  double sum = 0;
  double max = -1e300;
  for (int r = 0; r < world_size; ++r) {
    sum += check_value(r, i);
    max = std::max(max, check_value(r, i));
  }
  return op == ReduceOp::max ? max : op == ReduceOp::avg ? sum / world_size : sum;
}

bool close_enough(double got, double want, DType dtype) {
  const double relative = dtype == DType::bf16   ? 1.0 / 128
                          : dtype == DType::fp16 ? 1.0 / 1024
                                                 : 1e-6;
  return std::abs(got - want) <= std::abs(want) * relative + 1e-12;
}

struct Row {
  size_t bytes = 0;
  size_t count = 0;
  double time_us = 0;
  double algbw = 0;
  double busbw = 0;
  long long wrong = -1;  // -1: not checked
};

// Times one collective at one size on every rank; returns rank-agreed figures.
class CollectiveBench {
 public:
  CollectiveBench(Communicator& comm, Collective op, const CommBenchOptions& options, DType dtype,
                  ReduceOp redop, size_t max_bytes, bool on_device)
      : comm_(comm),
        op_(op),
        options_(options),
        dtype_(dtype),
        redop_(redop),
        input_(max_bytes, on_device),
        output_(max_bytes, on_device) {}

  Row run(size_t bytes) {
    const int n = comm_.size();
    const size_t element = dtype_size(dtype_);
    Row row;
    row.count = bytes / element;
    // reduce_scatter/allgather move equal parts: the count is rounded down to a multiple of n.
    if (op_ == Collective::reduce_scatter || op_ == Collective::allgather) {
      row.count -= row.count % static_cast<size_t>(n);
    }
    row.bytes = row.count * element;
    if (options_.check) row.wrong = check(row.count);
    input_.zero();  // timing on zeros: sums never overflow or turn denormal
    for (int i = 0; i < options_.warmup_iters; ++i) issue(row.count);
    double seconds = 0;
    for (int round = 0; round < options_.rounds; ++round) {
      MPI_Barrier(MPI_COMM_WORLD);
      Timer timer;
      for (int i = 0; i < options_.iters; ++i) issue(row.count);
      double round_seconds = timer.seconds() / options_.iters;
      // The slowest rank's time is the collective's time; the fastest round is the least
      // disturbed by other work on the machine.
      MPI_Allreduce(MPI_IN_PLACE, &round_seconds, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      seconds = round == 0 ? round_seconds : std::min(seconds, round_seconds);
    }
    row.time_us = seconds * 1e6;
    row.algbw = seconds > 0 ? static_cast<double>(row.bytes) / seconds / 1e9 : 0;
    row.busbw = row.algbw * bus_factor(op_, n);
    return row;
  }

 private:
  void issue(size_t count) {
    const size_t part = count / static_cast<size_t>(comm_.size());
    switch (op_) {
      case Collective::allreduce:
        return comm_.allreduce(input_.data(), count, dtype_, redop_);
      case Collective::reduce_scatter:
        return comm_.reduce_scatter(input_.data(), output_.data(), part, dtype_, redop_);
      case Collective::allgather:
        return comm_.allgather(input_.data(), output_.data(), part, dtype_);
      case Collective::broadcast:
        return comm_.broadcast(input_.data(), count, dtype_, options_.root);
    }
  }

  // Returns the wrong elements summed over all ranks.
  long long check(size_t count) {
    const int rank = comm_.rank();
    const int n = comm_.size();
    const size_t part = count / static_cast<size_t>(n);
    const size_t element = dtype_size(dtype_);
    // allgather sends this rank's part; everything else sends the whole buffer.
    const size_t input_count = op_ == Collective::allgather ? part : count;
    const size_t input_first = op_ == Collective::allgather ? part * static_cast<size_t>(rank) : 0;
    for (size_t i = 0; i < input_count; ++i) {
      store_value(input_.host(), i, dtype_, check_value(rank, input_first + i));
    }
    input_.upload(input_count * element);
    issue(count);
    long long wrong = 0;
    switch (op_) {
      case Collective::allreduce:
        input_.download(count * element);
        for (size_t i = 0; i < count; ++i) {
          wrong += !close_enough(load_value(input_.host(), i, dtype_),
                                 expected_reduction(redop_, n, i), dtype_);
        }
        break;
      case Collective::reduce_scatter:
        output_.download(part * element);
        for (size_t j = 0; j < part; ++j) {
          const double want = expected_reduction(redop_, n, part * static_cast<size_t>(rank) + j);
          wrong += !close_enough(load_value(output_.host(), j, dtype_), want, dtype_);
        }
        break;
      case Collective::allgather:
        output_.download(count * element);
        for (size_t i = 0; i < count; ++i) {
          const int owner = static_cast<int>(i / std::max<size_t>(part, 1));
          wrong +=
              !close_enough(load_value(output_.host(), i, dtype_), check_value(owner, i), dtype_);
        }
        break;
      case Collective::broadcast:
        input_.download(count * element);
        for (size_t i = 0; i < count; ++i) {
          wrong += !close_enough(load_value(input_.host(), i, dtype_),
                                 check_value(options_.root, i), dtype_);
        }
        break;
    }
    MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    return wrong;
  }

  Communicator& comm_;
  Collective op_;
  const CommBenchOptions& options_;
  DType dtype_;
  ReduceOp redop_;
  BenchBuffer input_;
  BenchBuffer output_;
};

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
    auto found = std::find(names.begin(), names.end(), name);
    if (found == names.end()) {
      throw CollectiveError(
          cat("bench comm: --op '", item, "' is not a collective", did_you_mean(name, names),
              " (expected allreduce, reduce_scatter, allgather, broadcast or all)"));
    }
    result.push_back(kAllCollectives[found - names.begin()]);
  }
  return result;
}

void print_table_header(std::string_view backend, Collective op, int world_size, DType dtype,
                        ReduceOp redop, const CommBenchOptions& options) {
  std::printf(
      "# %s on %s, %d ranks, dtype %s, redop %s, %d iters after %d warm-up, best of %d rounds\n",
      std::string(collective_name(op)).c_str(), std::string(backend).c_str(), world_size,
      std::string(dtype_name(dtype)).c_str(), std::string(reduce_op_name(redop)).c_str(),
      options.iters, options.warmup_iters, options.rounds);
  std::printf("#%13s %12s %6s %6s %5s %11s %9s %9s %7s\n", "size", "count", "type", "redop", "root",
              "time", "algbw", "busbw", "#wrong");
  std::printf("#%13s %12s %6s %6s %5s %11s %9s %9s %7s\n", "(B)", "(elements)", "", "", "", "(us)",
              "(GB/s)", "(GB/s)", "");
}

int run_bench_comm(const std::vector<std::string>& args, MpiSession& mpi) {
  const CommBenchOptions options = parse_comm_bench_options(args);
  if (options.help) {
    if (mpi.rank() == 0)
      std::cout << comm_bench_options(const_cast<CommBenchOptions&>(options)) << "\n";
    return 0;
  }
  const DType dtype = [&] {
    try {
      return parse_dtype(options.dtype, "bench comm: --dtype");
    } catch (const Error& error) {
      throw CollectiveError(error.what());
    }
  }();
  const ReduceOp redop = [&] {
    try {
      return parse_reduce_op(options.redop, "bench comm: --redop");
    } catch (const Error& error) {
      throw CollectiveError(error.what());
    }
  }();
  const std::vector<Collective> collectives = parse_collectives(options.ops);
  const size_t min_bytes = std::max<size_t>(parse_size(options.min_bytes, "--min-bytes"), 1);
  const size_t max_bytes = parse_size(options.max_bytes, "--max-bytes");
  if (max_bytes < min_bytes) {
    throw CollectiveError(cat("bench comm: --max-bytes ", options.max_bytes,
                              " is below --min-bytes ", options.min_bytes));
  }
  if ((dtype == DType::int32 || dtype == DType::int64) && redop == ReduceOp::avg) {
    throw CollectiveError(
        cat("bench comm: --redop avg needs a floating-point --dtype, got ", dtype_name(dtype)));
  }
  if (options.root < 0 || options.root >= mpi.size()) {
    throw CollectiveError(
        cat("bench comm: --root ", options.root, " is not a rank (0..", mpi.size() - 1, ")"));
  }

  json results = json::array();
  long long total_wrong = 0;
  for (const std::string& backend_item : split(options.backends, ',')) {
    const std::string backend_name = trim(backend_item);
    std::unique_ptr<Communicator> comm;
    bool on_device = false;
    if (backend_name == "raw-mpi") {
      RawMpiCommunicator::check_supported(dtype, redop);
      comm = std::make_unique<RawMpiCommunicator>(MPI_COMM_WORLD);
    } else {
      CommBackend requested = CommBackend::automatic;
      try {
        requested = parse_comm_backend(backend_name, "bench comm: --backend");
      } catch (const Error& error) {
        throw CollectiveError(cat(error.what(), " or raw-mpi"));
      }
      DiscoverOptions discover;
      discover.want_gpu = requested == CommBackend::nccl;
      const Topology topology = discover_topology(MPI_COMM_WORLD, discover);
      const CommBackend backend = resolve_comm_backend(requested, topology);
      CommOptions comm_options;
      comm_options.timeout_seconds = options.timeout;
      comm_options.device = topology.device;
      comm = make_communicator(backend, MPI_COMM_WORLD, comm_options);
      on_device = backend == CommBackend::nccl;
    }
    for (Collective op : collectives) {
      CollectiveBench bench(*comm, op, options, dtype, redop, max_bytes, on_device);
      if (mpi.rank() == 0 && !options.json) {
        print_table_header(comm->name(), op, comm->size(), dtype, redop, options);
      }
      for (double size = static_cast<double>(min_bytes);
           size <= static_cast<double>(max_bytes) * 1.000001; size *= options.factor) {
        const Row row = bench.run(static_cast<size_t>(size));
        if (row.count == 0) continue;
        if (row.wrong > 0) total_wrong += row.wrong;
        const bool reduces = op == Collective::allreduce || op == Collective::reduce_scatter;
        const int root = op == Collective::broadcast ? options.root : -1;
        if (mpi.rank() != 0) continue;
        if (options.json) {
          json entry = {{"backend", comm->name()},
                        {"op", collective_name(op)},
                        {"world_size", comm->size()},
                        {"size_bytes", row.bytes},
                        {"count", row.count},
                        {"dtype", dtype_name(dtype)},
                        {"redop", reduces ? reduce_op_name(redop) : "none"},
                        {"root", root},
                        {"time_us", row.time_us},
                        {"algbw_gbps", row.algbw},
                        {"busbw_gbps", row.busbw}};
          entry["wrong"] = row.wrong >= 0 ? json(row.wrong) : json(nullptr);
          results.push_back(entry);
        } else {
          std::printf(" %13zu %12zu %6s %6s %5d %11.1f %9.3f %9.3f %7s\n", row.bytes, row.count,
                      std::string(dtype_name(dtype)).c_str(),
                      reduces ? std::string(reduce_op_name(redop)).c_str() : "none", root,
                      row.time_us, row.algbw, row.busbw,
                      row.wrong >= 0 ? std::to_string(row.wrong).c_str() : "N/A");
          std::fflush(stdout);
        }
      }
    }
  }
  if (mpi.rank() == 0 && options.json) {
    std::cout << json{{"benchmark", "comm"}, {"world_size", mpi.size()}, {"results", results}}.dump(
                     2)
              << "\n";
  }
  if (total_wrong > 0) {
    throw CollectiveError(
        cat("bench comm: --check found ", total_wrong, " wrong elements (see #wrong)"));
  }
  return 0;
}

// `bench train`: its own flags (--steps, --warmup-steps, --sgemm-size, --no-profile, --json) are
// taken out; everything else is `autotrain train`'s command line, parsed by the config layer.
struct TrainBenchCommandLine {
  train::TrainBenchOptions options;
  bool json = false;
  std::vector<std::string> train_args;
};

constexpr std::string_view kTrainBenchHelp =
    "usage: autotrain bench train --config X.yaml [train options...] [--steps N]\n"
    "                             [--warmup-steps W] [--sgemm-size N] [--no-profile] [--json]\n"
    "\n"
    "Runs N real optimizer steps (ZeRO engine + model + optimizer, as `train` does) on random\n"
    "tokens and prints tokens/s, the step time split, GFLOP/s, MFU against a measured sgemm peak,\n"
    "and per-rank memory.\n"
    "\n"
    "  --steps N         timed optimizer steps (default 10)\n"
    "  --warmup-steps W  untimed steps first (default 2)\n"
    "  --sgemm-size N    n of the n x n x n sgemm that measures each rank's peak (default 2048)\n"
    "  --no-profile      skip the extra step with per-kernel timers\n"
    "  --json            print one JSON document instead of tables\n"
    "\n"
    "Every `autotrain train` option is accepted (see 'autotrain train --help').\n";

long long parse_count(const std::string& flag, const std::string& text) {
  std::size_t used = 0;
  long long value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size()) {
    throw CollectiveError(cat("bench train: ", flag, " '", text, "' is not an integer"));
  }
  return value;
}

TrainBenchCommandLine split_train_bench_args(const std::vector<std::string>& args) {
  TrainBenchCommandLine line;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    const std::size_t equals = arg.find('=');
    const std::string flag = arg.substr(0, equals);
    auto value = [&]() -> std::string {
      if (equals != std::string::npos) return arg.substr(equals + 1);
      if (i + 1 >= args.size()) throw CollectiveError(cat("bench train: ", flag, " needs a value"));
      return args[++i];
    };
    if (flag == "--steps") {
      line.options.steps = parse_count(flag, value());
    } else if (flag == "--warmup-steps") {
      line.options.warmup_steps = parse_count(flag, value());
    } else if (flag == "--sgemm-size") {
      line.options.sgemm_size = static_cast<int>(parse_count(flag, value()));
    } else if (arg == "--no-profile") {
      line.options.profile = false;
    } else if (arg == "--json") {
      line.json = true;
    } else {
      line.train_args.push_back(arg);
    }
  }
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
            {"total", r.model_state.total()}}},
          {"activation_bytes", r.activation_bytes},
          {"device", r.device},
          {"precision", r.precision},
          {"device_memory_bytes", r.device_memory_bytes},
          {"peak_rss_bytes", r.peak_rss_bytes},
          {"blas_threading", kernels::blas_threading()},
          {"profile", profile}};
}

void print_train_bench(const train::TrainBenchResult& r) {
  std::printf(
      "bench train: %d rank(s) x %d thread(s), ZeRO stage %d, %s communicator, %zu parameters, "
      "B=%d T=%d accumulation %lld, %lld steps after %lld warm-up\n",
      r.world_size, r.threads, r.zero_stage, r.comm_backend.c_str(), r.num_parameters, r.batch_size,
      r.seq_len, r.gradient_accumulation, r.steps, r.warmup_steps);
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
  std::printf("model state per rank: %s; activations %s\n", zero::describe(r.model_state).c_str(),
              human_bytes(static_cast<double>(r.activation_bytes)).c_str());
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
  if (r.profile.empty()) return;
  std::printf("\n%-14s %10s %10s   (rank 0, one profiled step)\n", "kernel", "fwd(ms)", "bwd(ms)");
  for (const auto& p : r.profile) {
    // A kind with no time of its own ran inside another (on the GPU the GELU rides in the matmul).
    if (p.forward_s == 0.0 && p.backward_s == 0.0) continue;
    std::printf("%-14s %10.2f %10.2f\n", p.name.c_str(), p.forward_s * 1e3, p.backward_s * 1e3);
  }
}

int run_bench_train(const std::vector<std::string>& args, MpiSession& mpi) {
  const TrainBenchCommandLine line = split_train_bench_args(args);
  config::TrainCommandLine command_line;
  try {
    command_line = config::parse_train_command_line(line.train_args);
  } catch (const Error& error) {
    // A misspelt bench flag reaches the train parser, which does not know the bench flags.
    const std::vector<std::string> bench_flags = {"--steps", "--warmup-steps", "--sgemm-size",
                                                  "--no-profile", "--json"};
    std::string hint;
    for (const auto& arg : line.train_args) {
      const std::string flag = arg.substr(0, arg.find('='));
      if (flag.rfind("--", 0) == 0 && std::string(error.what()).find(flag) != std::string::npos)
        hint = did_you_mean(flag, bench_flags);
      if (!hint.empty()) break;
    }
    throw CollectiveError(cat("bench train: ", error.what(), hint,
                              "\nrun 'autotrain bench train --help' for every option"));
  }
  if (command_line.help) {
    if (mpi.rank() == 0) std::cout << kTrainBenchHelp;
    return 0;
  }
  const train::RunSetup setup = train::setup_run(command_line, MPI_COMM_WORLD);
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

// The kinds of benchmark: add a kind here.
struct BenchKind {
  std::string name;
  std::string summary;
  int (*run)(const std::vector<std::string>&, MpiSession&);
};

const std::vector<BenchKind>& bench_kinds() {
  static const std::vector<BenchKind> kinds = {
      {"comm", "time the communicator's collectives (nccl-tests style table)", run_bench_comm},
      {"train", "time real optimizer steps of a config: tokens/s, step split, MFU, memory",
       run_bench_train},
  };
  return kinds;
}

}  // namespace

int run_bench(const std::vector<std::string>& args, MpiSession& mpi) {
  std::vector<std::string> names;
  for (const auto& kind : bench_kinds()) names.push_back(kind.name);
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    if (mpi.rank() == 0) {
      std::cout << "usage: autotrain bench <kind> [options]\n\nkinds:\n";
      std::size_t width = 0;
      for (const auto& kind : bench_kinds()) width = std::max(width, kind.name.size());
      for (const auto& kind : bench_kinds()) {
        std::cout << "  " << kind.name << std::string(width - kind.name.size() + 2, ' ')
                  << kind.summary << "\n";
      }
      std::cout << "\n'autotrain bench <kind> --help' shows a kind's options.\n";
    }
    if (args.empty())
      throw CollectiveError(
          cat("bench: which benchmark? (expected one of: ", join(names, ", "), ")"));
    return 0;
  }
  for (const auto& kind : bench_kinds()) {
    if (kind.name == args[0]) return kind.run({args.begin() + 1, args.end()}, mpi);
  }
  throw CollectiveError(cat("bench: unknown benchmark '", args[0], "'",
                            did_you_mean(args[0], names), " (expected one of: ", join(names, ", "),
                            ")"));
}

}  // namespace autotrain::cli
