#pragma once
// One function per subcommand; each lives in src/cli/<name>.cpp and parses its own options.
#include <string>
#include <vector>

namespace autotrain {
class MpiSession;
}

namespace autotrain::cli {

int run_train(const std::vector<std::string>& args, MpiSession& mpi);
int run_generate(const std::vector<std::string>& args, MpiSession& mpi);
int run_env(const std::vector<std::string>& args, MpiSession& mpi);
int run_doctor(const std::vector<std::string>& args, MpiSession& mpi);
int run_prepare(const std::vector<std::string>& args, MpiSession& mpi);
int run_ckpt(const std::vector<std::string>& args, MpiSession& mpi);
int run_export(const std::vector<std::string>& args, MpiSession& mpi);
int run_bench(const std::vector<std::string>& args, MpiSession& mpi);
int run_launch(const std::vector<std::string>& args);    // no MPI: execs srun or mpirun
int run_status(const std::vector<std::string>& args);    // no MPI: reads a project folder
int run_plot(const std::vector<std::string>& args);      // no MPI: reads a project folder
int run_tokenize(const std::vector<std::string>& args);  // no MPI: one process
int run_tools(const std::vector<std::string>& args);     // no MPI: one process
int run_score(const std::vector<std::string>& args);     // no MPI: one process, on the CPU

}  // namespace autotrain::cli
