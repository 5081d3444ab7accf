// `autotrain export --checkpoint FILE --output DIR [--export-dtype fp32|bf16|fp16]
// [--merge-adapter]`: the model of a checkpoint as a Hugging Face folder (a LoRA checkpoint's
// adapter folder, or with --merge-adapter the merged model). Runs alone or under mpirun with any
// world size.
#include <iostream>

#include "autotrain/cli/commands.hpp"
#include "autotrain/cli/options.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/mpi.hpp"
#include "autotrain/train/checkpointing.hpp"

namespace autotrain::cli {

namespace po = boost::program_options;

int run_export(const std::vector<std::string>& args, MpiSession& mpi) {
  std::string checkpoint;
  std::string output;
  std::string dtype = "fp32";
  std::string max_shard_size = "5GB";
  bool merge_adapter = false;
  po::options_description description("autotrain export --checkpoint FILE --output DIR [options]");
  description.add_options()  //
      ("checkpoint", po::value(&checkpoint)->value_name("FILE"),
       "checkpoint to export (project/checkpoints/checkpoint-<step>.h5)")  //
      ("output", po::value(&output)->value_name("DIR"),
       "folder to write model.safetensors, config.json and the tokenizer files into "
       "(adapter_model.safetensors and adapter_config.json for a LoRA checkpoint)")  //
      ("export-dtype", po::value(&dtype)->value_name("fp32|bf16|fp16"),
       "precision of model.safetensors (default fp32)")  //
      ("max-shard-size", po::value(&max_shard_size)->value_name("SIZE"),
       "largest weight file; above it shards with model.safetensors.index.json (default 5GB)")  //
      ("merge-adapter", po::bool_switch(&merge_adapter),
       "for a LoRA checkpoint: write the merged model (the base's weights plus the scaled "
       "adapters) into DIR and the adapter folder into DIR/adapter, as merge_adapter: true does "
       "at the end of training")  //
      ("help,h", "show this help");
  const auto values = parse_command_options("export", description, args);
  if (values.count("help")) {
    if (mpi.rank() == 0) std::cout << description << "\n";
    return 0;
  }
  if (checkpoint.empty() || output.empty()) {
    throw CollectiveError(
        "export: --checkpoint FILE and --output DIR are required; see autotrain export --help");
  }
  if (dtype != "fp32" && dtype != "bf16" && dtype != "fp16") {
    throw CollectiveError(
        cat("export: --export-dtype must be fp32, bf16 or fp16, got '", dtype, "'"));
  }
  if (const std::string problem = config::byte_size_rule(max_shard_size); !problem.empty()) {
    throw CollectiveError(cat("export: --max-shard-size: expected ", problem));
  }
  train::export_checkpoint(checkpoint, output, dtype, max_shard_size, merge_adapter);
  return 0;
}

}  // namespace autotrain::cli
