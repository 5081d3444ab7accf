#pragma once
// The `autotrain` command line: subcommand dispatch, --help, --version, and the job-wide error
// path (an error on any rank becomes a message and a non-zero exit of the whole job).
#include <functional>
#include <string>
#include <vector>

namespace autotrain {
class MpiSession;
}

namespace autotrain::cli {

// The arguments after the subcommand name, and the MPI session the command runs in.
using CommandFunction = std::function<int(const std::vector<std::string>& args, MpiSession& mpi)>;
// Commands that run without MPI (launch, status, plot: on login nodes, before any launcher).
using LocalCommandFunction = std::function<int(const std::vector<std::string>& args)>;

struct Command {
  std::string name;
  std::string summary;
  CommandFunction run;
  bool needs_mpi = true;             // false for commands that never talk to other ranks
  LocalCommandFunction run_local{};  // set (and run, `run` unset) when needs_mpi is false
};

// The table of every subcommand (src/cli/commands.cpp).
const std::vector<Command>& commands();

// Entry point: returns the process exit code.
int run(int argc, char** argv);

}  // namespace autotrain::cli
