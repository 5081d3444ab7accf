#include "autotrain/cli/commands.hpp"

#include "autotrain/cli/app.hpp"

namespace autotrain::cli {

const std::vector<Command>& commands() {
  static const std::vector<Command> table = {
      {"train", "train a model (or check the plan with --dry-run)", run_train},
      {"env", "show the rank topology, devices and build", run_env},
      {"doctor", "check a job's nodes, network, folder and config before it trains", run_doctor},
      {"prepare", "tokenize a data_path into token shards (llm.c format)", run_prepare},
      {"ckpt", "inspect or verify a checkpoint (ckpt inspect|verify FILE)", run_ckpt},
      {"export", "write a checkpoint's model as a Hugging Face folder", run_export},
      {"generate", "sample text from an exported model folder", run_generate},
      {"bench", "benchmark collectives, training steps or the CPU AdamW step (comm|train|adamw)",
       run_bench},
      {"launch",
       "start training with srun or mpirun (or write an sbatch script)",
       {},
       false,
       run_launch},
      {"status",
       "show a project's progress: step, loss, tokens/s, ETA, checkpoint",
       {},
       false,
       run_status},
      {"plot", "draw a project's loss curves into loss.svg (and loss.png)", {}, false, run_plot},
      {"tokenize",
       "show the ids a tokenizer gives a text (gpt2, byte or a tokenizer.json)",
       {},
       false,
       run_tokenize},
      {"score",
       "print a reward model's rewards of texts, or of preference pairs with its accuracy",
       {},
       false,
       run_score},
      {"tools",
       "AutoTrain's tools: merge-llm-adapter (a LoRA adapter folder into its base model); "
       "show-rows (a dataset's rows as autotrain reads them)",
       {},
       false,
       run_tools},
  };
  return table;
}

}  // namespace autotrain::cli
