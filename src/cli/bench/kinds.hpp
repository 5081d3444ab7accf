#pragma once
// The kinds of `autotrain bench`, one file each in src/cli/bench/ (comm.cpp, train.cpp,
// adamw.cpp); bench.cpp lists them and dispatches. Each takes the arguments after its name.
#include <string>
#include <vector>

namespace autotrain {
class MpiSession;
}

namespace autotrain::cli {

int run_bench_comm(const std::vector<std::string>& args, MpiSession& mpi);
int run_bench_train(const std::vector<std::string>& args, MpiSession& mpi);
int run_bench_adamw(const std::vector<std::string>& args, MpiSession& mpi);

}  // namespace autotrain::cli
