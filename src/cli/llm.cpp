// `autotrain llm --train ...`: AutoTrain Advanced's own command line, run as `autotrain train`
// with the same parameters (every AutoTrain flag is a train parameter, an alias of one, or a key
// train notes as meaning nothing here). AutoTrain starts its ranks itself (accelerate launch
// --num_processes N); so does this: started without a launcher, with --num-gpus N or
// --num-processes N (or an --accelerate-config's num_processes), it starts itself under the
// launcher `autotrain launch` would use (srun inside a Slurm allocation, mpirun outside); under
// a launcher it trains in place.
#include "autotrain/cli/llm.hpp"

#include <cstdlib>
#include <string>
#include <vector>

#include "autotrain/cli/launch_plan.hpp"
#include "autotrain/config/load.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/strings.hpp"

namespace autotrain::cli {
namespace {

// AutoTrain's llm flags that choose what to do rather than how to train.
constexpr std::string_view kRefusedModes[] = {"--deploy", "--inference"};

// "--num-gpus", "--num_gpus" and "--num-gpus=4" all name num-gpus; returns "" for other words.
std::string flag_name(const std::string& word) {
  if (!word.starts_with("--")) return "";
  std::string name =
      word.substr(2, word.find('=') == std::string::npos ? std::string::npos : word.find('=') - 2);
  for (char& c : name) {
    if (c == '_') c = '-';
  }
  return name;
}

// Takes `--name N` (or --name=N) out of args; -1 when absent.
int take_count(std::vector<std::string>& args, std::string_view name) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (flag_name(args[i]) != name) continue;
    const auto equals = args[i].find('=');
    const bool inline_value = equals != std::string::npos;
    AT_CHECK(inline_value || i + 1 < args.size(), "llm: --", name, " needs a number");
    const std::string text = inline_value ? args[i].substr(equals + 1) : args[i + 1];
    char* end = nullptr;
    const long value = std::strtol(text.c_str(), &end, 10);
    AT_CHECK(!text.empty() && *end == '\0' && value >= 0 && value <= 1 << 20, "llm: --", name, " ",
             text, ": expected a count (0 or more)");
    args.erase(args.begin() + static_cast<std::ptrdiff_t>(i),
               args.begin() + static_cast<std::ptrdiff_t>(i + (inline_value ? 1 : 2)));
    return static_cast<int>(value);
  }
  return -1;
}

// The value of `--name V` or `--name=V` in args (left in place); "" when absent.
std::string flag_value(const std::vector<std::string>& args, std::string_view name) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (flag_name(args[i]) != name) continue;
    const auto equals = args[i].find('=');
    if (equals != std::string::npos) return args[i].substr(equals + 1);
    return i + 1 < args.size() ? args[i + 1] : "";
  }
  return "";
}

}  // namespace

bool started_by_launcher() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "SLURM_STEP_ID"}) {
    const char* value = std::getenv(name);
    if (value != nullptr && *value != '\0') return true;
  }
  return false;
}

LlmCommand parse_llm_command(std::vector<std::string> args) {
  LlmCommand command;
  bool train = false;
  for (auto it = args.begin(); it != args.end();) {
    if (*it == "--train") {
      train = true;
      it = args.erase(it);
      continue;
    }
    for (const std::string_view mode : kRefusedModes) {
      AT_CHECK(*it != mode, "llm: ", mode,
               " is not offered: autotrain trains (--train), then `autotrain generate` runs the "
               "exported model");
    }
    ++it;
  }
  command.help = args.empty() || (args.size() == 1 && (args[0] == "--help" || args[0] == "-h"));
  AT_CHECK(train || command.help || args.empty(),
           "llm: --train is missing (AutoTrain's llm command trains with --train)");
  command.num_gpus = take_count(args, "num-gpus");
  command.num_processes = take_count(args, "num-processes");
  AT_CHECK(command.num_gpus == -1 || command.num_processes == -1,
           "llm: --num-gpus and --num-processes both set the number of ranks; give one");
  // accelerate launch --config_file starts the config's num_processes; so does this.
  if (const std::string accelerate = flag_value(args, "accelerate-config");
      !accelerate.empty() && command.num_gpus == -1 && command.num_processes == -1) {
    command.num_processes = config::accelerate_num_processes(accelerate);
  }
  command.train_args = {"train"};
  command.train_args.insert(command.train_args.end(), args.begin(), args.end());
  // Under a launcher, N is checked against the job (num_gpus_per_node); 0 GPUs is a CPU run.
  if (command.num_gpus == 0) {
    command.train_args.insert(command.train_args.end(), {"--device", "cpu"});
  } else if (command.num_gpus > 0) {
    command.train_args.insert(command.train_args.end(),
                              {"--num-gpus-per-node", std::to_string(command.num_gpus)});
    // GPUs were asked for: too few visible for the node's ranks is an error, not a CPU run.
    if (flag_value(args, "device").empty())
      command.train_args.insert(command.train_args.end(), {"--device", "cuda"});
  }
  return command;
}

std::string llm_help_text() {
  return "usage: autotrain llm --train --model M --data-path D --project-name P\n"
         "                     [--num-gpus N | --num-processes N] [train parameters]\n\n"
         "AutoTrain Advanced's command, run as 'autotrain train' with the same parameters\n"
         "(--kebab-case or --snake_case; 'autotrain train --help' lists them). Started without\n"
         "mpirun or srun, --num-gpus N (GPUs, 0 = one CPU rank) or --num-processes N starts N\n"
         "ranks under the launcher 'autotrain launch' picks: srun inside a Slurm allocation,\n"
         "mpirun outside; so does an --accelerate-config's num_processes. Under a launcher,\n"
         "--num-gpus is checked against the job.\n";
}

bool LlmCommand::starts_launcher() const {
  return !started_by_launcher() && (num_gpus > 0 || num_processes > 0);
}

int launch_llm(const LlmCommand& command) {
  LaunchRequest request;
  const LaunchSituation situation = detect_launch_situation();
  // accelerate's --num_processes counts GPUs where there are some, CPU ranks elsewhere.
  if (command.num_processes > 0 && situation.visible_gpus > 0) {
    request.num_gpus = command.num_processes;
  } else {
    request.num_gpus = command.num_gpus;
    request.num_processes = command.num_processes;
  }
  request.command_args = command.train_args;
  return exec_launch_plan(plan_launch(request, situation));
}

}  // namespace autotrain::cli
