// `autotrain bench <kind>`: benchmarks that run under mpirun like training. The kinds live in
// their own files: `bench comm` (bench/comm.cpp, the nccl-tests table of the communicator's
// collectives), `bench train` (bench/train.cpp, real optimizer steps of a config) and
// `bench adamw` (bench/adamw.cpp, the CPU AdamW step against the memory bandwidth).
#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "autotrain/cli/commands.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/mpi.hpp"
#include "autotrain/core/strings.hpp"
#include "bench/kinds.hpp"

namespace autotrain::cli {
namespace {

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
      {"adamw", "time the CPU AdamW step against the memory bandwidth (STREAM triad)",
       run_bench_adamw},
  };
  return kinds;
}

void print_bench_usage() {
  std::cout << "usage: autotrain bench <kind> [options]\n\nkinds:\n";
  std::size_t width = 0;
  for (const auto& kind : bench_kinds()) width = std::max(width, kind.name.size());
  for (const auto& kind : bench_kinds()) {
    std::cout << "  " << kind.name << std::string(width - kind.name.size() + 2, ' ') << kind.summary
              << "\n";
  }
  std::cout << "\n'autotrain bench <kind> --help' shows a kind's options.\n";
}

}  // namespace

int run_bench(const std::vector<std::string>& args, MpiSession& mpi) {
  std::vector<std::string> names;
  for (const auto& kind : bench_kinds()) names.push_back(kind.name);
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    if (mpi.rank() == 0) print_bench_usage();
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
