// `autotrain tools <tool>`: AutoTrain Advanced's `autotrain tools` commands, merge-llm-adapter
// (train/merge_adapter.hpp), and show-rows (the rows of a dataset as autotrain reads them,
// data/text_input.hpp). Runs without MPI: one process.
#include <iostream>

#include "autotrain/cli/commands.hpp"
#include "autotrain/cli/options.hpp"
#include "autotrain/config/base_model.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/strings.hpp"
#include "autotrain/data/text_input.hpp"
#include "autotrain/train/merge_adapter.hpp"

namespace autotrain::cli {
namespace {

namespace po = boost::program_options;

// AutoTrain's flags are snake or kebab case (--base_model_path, --base-model-path).
std::vector<std::string> kebab_flags(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  for (std::string arg : args) {
    if (arg.starts_with("--")) {
      const size_t end = std::min(arg.find('='), arg.size());
      for (size_t i = 2; i < end; ++i) {
        if (arg[i] == '_') arg[i] = '-';
      }
    }
    out.push_back(std::move(arg));
  }
  return out;
}

int run_merge_llm_adapter(const std::vector<std::string>& args) {
  train::AdapterMerge merge;
  std::string adapter;
  std::string output;
  std::string token;
  bool push_to_hub = false;
  bool help = false;
  po::options_description description(
      "autotrain tools merge-llm-adapter --base-model-path B --adapter-path A --output-folder O");
  description.add_options()  //
      ("base-model-path", po::value(&merge.base_model)->value_name("B"),
       "the base model: a model folder, or a Hub id in the offline Hub cache")  //
      ("adapter-path", po::value(&adapter)->value_name("A"),
       "the PEFT adapter folder (adapter_config.json, adapter_model.safetensors)")  //
      ("output-folder", po::value(&output)->value_name("O"),
       "where the merged model goes (model.safetensors, config.json, tokenizer files)")  //
      ("export-dtype", po::value(&merge.export_dtype)->value_name("fp32|bf16|fp16"),
       "precision of the merged weights (default fp32; AutoTrain's merge writes fp16)")  //
      ("max-shard-size", po::value(&merge.max_shard_size)->value_name("SIZE"),
       "largest weight file; above it shards with model.safetensors.index.json (default 5GB)")  //
      ("pad-to-multiple-of", po::value(&merge.pad_to_multiple_of)->value_name("N"),
       "AutoTrain's embedding padding: accepted when the vocabulary is already a multiple of N "
       "(autotrain never adds rows)")  //
      ("token", po::value(&token)->value_name("TOKEN"),
       "AutoTrain's Hub token: not used (autotrain never downloads) and never written")  //
      ("push-to-hub", po::bool_switch(&push_to_hub),
       "AutoTrain's upload: not done here (upload the folder with huggingface-cli upload)")  //
      ("help,h", po::bool_switch(&help), "show this help");
  parse_command_options("tools merge-llm-adapter", description, kebab_flags(args));
  if (help) {
    std::cout << description << "\n";
    return 0;
  }
  if (merge.base_model.empty() || adapter.empty() || output.empty()) {
    throw UsageError(
        "tools merge-llm-adapter: --base-model-path, --adapter-path and --output-folder are "
        "required; see autotrain tools merge-llm-adapter --help");
  }
  if (merge.export_dtype != "fp32" && merge.export_dtype != "bf16" &&
      merge.export_dtype != "fp16") {
    throw UsageError(
        cat("tools merge-llm-adapter: --export-dtype must be fp32, bf16 or fp16, got '",
            merge.export_dtype, "'"));
  }
  if (!token.empty()) {
    std::cerr << "tools merge-llm-adapter: note: --token is not used: autotrain never downloads "
                 "(the base model is a folder or in the offline Hub cache), and the token is "
                 "written nowhere\n";
  }
  if (push_to_hub) {
    std::cerr << "tools merge-llm-adapter: note: --push-to-hub is not done here: autotrain never "
                 "uploads; upload "
              << output << " with huggingface-cli upload\n";
  }
  merge.adapter = adapter;
  merge.output = output;
  const std::string summary = train::merge_adapter_folder(merge);
  std::cout << "tools merge-llm-adapter: wrote the merged model (" << merge.base_model << " + "
            << adapter << ") to " << summary << " (" << merge.export_dtype
            << "), config.json and tokenizer files\n";
  return 0;
}

// Prints the rows of a split as JSON lines: {"row": N, "column": value, ...}.
int run_show_rows(const std::vector<std::string>& args) {
  std::string data_path, split_name = "train", columns;
  long long max_rows = -1;
  bool help = false;
  po::options_description description(
      "autotrain tools show-rows --data-path D --columns A,B [--split S] [--max-rows N]");
  description.add_options()  //
      ("data-path", po::value(&data_path)->value_name("D"),
       "a file (.csv, .jsonl, .parquet) or a folder with the split's files, as train reads it")  //
      ("split", po::value(&split_name)->value_name("S"), "the split (default train)")            //
      ("columns", po::value(&columns)->value_name("A,B"),
       "the columns to show, comma separated")                                                //
      ("max-rows", po::value(&max_rows)->value_name("N"), "stop after N rows (default all)")  //
      ("help,h", po::bool_switch(&help), "show this help");
  parse_command_options("tools show-rows", description, kebab_flags(args));
  if (help) {
    std::cout << description << "\n";
    return 0;
  }
  if (data_path.empty() || columns.empty()) {
    throw UsageError(
        "tools show-rows: --data-path and --columns are required; see autotrain tools show-rows "
        "--help");
  }
  std::vector<data::Column> wanted;
  for (const std::string& name : split(columns, ',')) wanted.push_back({name, "columns"});
  long long shown = 0;
  struct Enough {};
  try {
    for (const data::InputFile& file :
         data::require_split(config::locate_dataset(data_path), split_name, true).files) {
      data::read_records(file, wanted,
                         [&](std::vector<nlohmann::ordered_json>&& values, size_t at) {
                           if (max_rows >= 0 && shown >= max_rows) throw Enough{};
                           nlohmann::ordered_json row = {{"file", file.path.string()}, {"row", at}};
                           for (std::size_t i = 0; i < wanted.size(); ++i)
                             row[wanted[i].name] = std::move(values[i]);
                           std::cout << row.dump() << "\n";
                           ++shown;
                         });
    }
  } catch (const Enough&) {
  }
  return 0;
}

void print_tools(std::ostream& out) {
  out << "usage: autotrain tools <tool> [options]\n\ntools:\n"
         "  merge-llm-adapter  merge a PEFT LoRA adapter folder into its base model\n"
         "  show-rows          print a dataset's rows as autotrain reads them (JSON lines)\n";
}

}  // namespace

int run_tools(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    print_tools(args.empty() ? std::cerr : std::cout);
    if (args.empty()) throw UsageError("tools: name a tool (merge-llm-adapter, show-rows)");
    return 0;
  }
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (args[0] == "merge-llm-adapter" || args[0] == "merge_llm_adapter")
    return run_merge_llm_adapter(rest);
  if (args[0] == "show-rows" || args[0] == "show_rows") return run_show_rows(rest);
  throw UsageError(cat("tools: unknown tool '", args[0], "'",
                       did_you_mean(args[0], {"merge-llm-adapter", "show-rows"}),
                       " (autotrain's tools: merge-llm-adapter, show-rows)"));
}

}  // namespace autotrain::cli
