#include "autotrain/cli/app.hpp"

#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "autotrain/cli/llm.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/log.hpp"
#include "autotrain/core/memory_usage.hpp"
#include "autotrain/core/mpi.hpp"
#include "autotrain/core/paths.hpp"
#include "autotrain/core/strings.hpp"

namespace autotrain::cli {
namespace {

void print_usage(std::ostream& out) {
  out << "autotrain " << version()
      << " — distributed training of transformer language models on HPC systems\n\n"
         "usage: autotrain <command> [options]        (under mpirun, mpiexec or srun)\n\n"
         "commands:\n";
  for (const auto& command : commands()) {
    out << "  " << command.name << std::string(10 - std::min<size_t>(9, command.name.size()), ' ')
        << command.summary << "\n";
  }
  out << "\n'autotrain <command> --help' shows a command's options. Documentation: docs/ in the\n"
         "source tree (launching, configuration, checkpoint format, benchmarks).\n";
}

std::vector<std::string> command_names() {
  std::vector<std::string> names;
  for (const auto& command : commands()) names.push_back(command.name);
  return names;
}

// What the user probably meant by an unknown command.
std::string command_hint(const std::vector<std::string>& args) {
  if (args[0].starts_with("--")) return ": the command comes first (autotrain <command> [options])";
  return did_you_mean(args[0], command_names());
}

// Exit codes: 0 success, 1 error, 2 usage error (documented in docs/launching.md).
constexpr int kExitError = 1;
constexpr int kExitUsage = 2;

// AUTOTRAIN_INJECT_FAILURE=<rank> makes that rank fail as the command starts, while the others
// go on into their first collective: the tests use it to prove that one rank's error aborts the
// whole job instead of leaving the others waiting.
void inject_failure_if_asked(int rank) {
  const char* target = std::getenv("AUTOTRAIN_INJECT_FAILURE");
  if (target == nullptr || *target == '\0') return;
  if (std::atoi(target) == rank) {
    throw Error(cat("injected failure on rank ", rank, " (AUTOTRAIN_INJECT_FAILURE=", target, ")"));
  }
}

}  // namespace

int run(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    print_usage(std::cout);
    return args.empty() ? kExitUsage : 0;
  }
  if (args[0] == "--version" || args[0] == "-V") {
    std::cout << "autotrain " << version() << "\n";
    return 0;
  }
  // AutoTrain Advanced's forms: `autotrain --config x.yaml` trains the config; `autotrain llm
  // --train ...` trains, or first starts the ranks its --num-gpus asks for (src/cli/llm.cpp).
  if (args[0] == "--config" || args[0].starts_with("--config=")) args.insert(args.begin(), "train");
  if (args[0] == "llm") {
    LlmCommand llm;
    try {
      llm = parse_llm_command({args.begin() + 1, args.end()});
    } catch (const std::exception& error) {
      std::cerr << "error: " << error.what() << "\nrun 'autotrain llm --help' for its usage\n";
      return kExitUsage;
    }
    if (llm.help) {
      std::cout << llm_help_text();
      return 0;
    }
    if (llm.starts_launcher()) {
      try {
        return launch_llm(llm);
      } catch (const std::exception& error) {
        std::cerr << "error: " << failure_message(error) << "\n";
        return kExitError;
      }
    }
    args = llm.train_args;
  }
  const Command* command = nullptr;
  for (const auto& candidate : commands()) {
    if (candidate.name == args[0]) command = &candidate;
  }
  if (command == nullptr) {
    std::cerr << "error: unknown command '" << args[0] << "'" << command_hint(args)
              << "\nrun 'autotrain --help' for the list of commands\n";
    return kExitUsage;
  }
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (!command->needs_mpi) {
    try {
      return command->run_local(rest);
    } catch (const UsageError& error) {
      std::cerr << "error: " << error.what() << "\n";
      return kExitUsage;
    } catch (const std::exception& error) {
      std::cerr << "error: " << failure_message(error) << "\n";
      return kExitError;
    }
  }

  MpiSession mpi(&argc, &argv);
  try {
    mpi.require_thread_multiple();
    inject_failure_if_asked(mpi.rank());
    return command->run(rest, mpi);
  } catch (const UsageError& error) {
    if (mpi.rank() == 0) std::cerr << "error: " << error.what() << "\n";
    return kExitUsage;
  } catch (const CollectiveError& error) {
    // Every rank met the same error: say it once and leave together.
    if (mpi.rank() == 0) std::cerr << "error: " << error.what() << "\n";
    return kExitError;
  } catch (const std::exception& error) {
    log::error(failure_message(error));
    abort_job(kExitError);
  }
}

}  // namespace autotrain::cli
