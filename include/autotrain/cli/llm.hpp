#pragma once
// AutoTrain Advanced's command line (`autotrain llm --train ...`, src/cli/llm.cpp) as autotrain
// runs it: the train command with the same parameters, started under a launcher when AutoTrain's
// --num-gpus or accelerate's --num-processes asks for ranks and none started this process.
#include <string>
#include <vector>

namespace autotrain::cli {

struct LlmCommand {
  std::vector<std::string> train_args;  // "train", then the parameters
  int num_gpus = -1;                    // --num-gpus; -1 = not given; 0 = one CPU rank
  int num_processes = -1;               // --num-processes; -1 = not given
  bool help = false;                    // `autotrain llm --help`
  // No launcher started this process and more than one rank is asked for.
  bool starts_launcher() const;
};

// The arguments after `llm`: --train required (--deploy and --inference refused), --num-gpus and
// --num-processes taken out (under a launcher --num-gpus N becomes --num-gpus-per-node N, checked
// against the job; 0 becomes --device cpu). Throws Error naming the flag.
LlmCommand parse_llm_command(std::vector<std::string> args);

// `autotrain llm --help`.
std::string llm_help_text();

// Whether a launcher started this process (Open MPI's, PMI's or PMIx's variables, or a Slurm step).
bool started_by_launcher();

// Replaces this process with the launcher that starts the command's ranks (autotrain launch's
// plan). Returns only by throwing.
int launch_llm(const LlmCommand& command);

}  // namespace autotrain::cli
