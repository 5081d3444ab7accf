// `autotrain generate`: sample text from an exported model folder; with --chat, the reply of a
// chat model to --prompt as a user message (data/chat_prompt.hpp).
#include "autotrain/train/generate.hpp"

#include <iostream>
#include <string>

#include "autotrain/cli/commands.hpp"
#include "autotrain/cli/options.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/mpi.hpp"
#include "autotrain/data/chat_prompt.hpp"

namespace autotrain::cli {

namespace po = boost::program_options;

int run_generate(const std::vector<std::string>& args, MpiSession& mpi) {
  std::string model_dir;
  train::GenerateOptions options;
  int top_k = options.top_k;
  long long seed = static_cast<long long>(options.seed);
  std::string device = "auto";
  std::string mixed_precision = "no";
  bool chat = false;
  std::string system;
  std::string quantization = "none";
  bool double_quant = false;
  po::options_description description("autotrain generate --model FOLDER [options]");
  description.add_options()  //
      ("model", po::value(&model_dir)->value_name("FOLDER"),
       "model folder written by train or export (model.safetensors, config.json)")  //
      ("prompt", po::value(&options.prompt)->value_name("TEXT"),
       "text to continue (default: "
       "start a new document)")  //
      ("max-new-tokens", po::value(&options.max_new_tokens)->value_name("N"),
       "tokens to generate (default 100)")  //
      ("temperature", po::value(&options.temperature)->value_name("T"),
       "sampling temperature; 0 = greedy (default 1.0)")  //
      ("top-k", po::value(&top_k)->value_name("K"),
       "sample among the K likeliest tokens; "
       "0 = all (default 50)")                                                 //
      ("seed", po::value(&seed)->value_name("N"), "random seed (default 42)")  //
      ("device", po::value(&device)->value_name("auto|cpu|cuda"),
       "where the model runs: auto = the first visible GPU when the build has CUDA and one is "
       "visible, else the CPU (default auto)")  //
      ("mixed-precision", po::value(&mixed_precision)->value_name("no|bf16|fp16"),
       "compute precision; on the CPU bf16 where it has native bf16, else fp32 (default no)")  //
      ("chat", po::bool_switch(&chat),
       "--prompt is a user message: rendered with the folder's chat template (tokenizer_config."
       "json's chat_template) up to the assistant's turn; prints only the reply, which ends at "
       "the template's end-of-turn token")  //
      ("system", po::value(&system)->value_name("TEXT"),
       "with --chat: a system message before the user's")  //
      ("quantization", po::value(&quantization)->value_name("none|int4|int8"),
       "the (base) model's block weights quantized and dequantized as a QLoRA run holds them "
       "(int4: NF4), so that a QLoRA adapter runs on the weights it was trained against "
       "(default none)")  //
      ("double-quant", po::bool_switch(&double_quant),
       "with --quantization int4: the absmax values in 8 bits too (bnb_4bit_use_double_quant)")  //
      ("help,h", "show this help");
  const auto values = parse_command_options("generate", description, args);
  if (values.count("help")) {
    if (mpi.rank() == 0) std::cout << description << "\n";
    return 0;
  }
  if (model_dir.empty())
    throw CollectiveError("generate: --model FOLDER is required; see autotrain generate --help");
  if (!system.empty() && !chat)
    throw CollectiveError("generate: --system needs --chat (a system message of a chat)");
  options.top_k = top_k;
  options.seed = static_cast<uint64_t>(seed);
  std::optional<model::QuantOptions> quantized;
  if (quantization != "none") {
    try {
      quantized = model::QuantOptions{kernels::parse_quant_kind(quantization, "--quantization"),
                                      double_quant};
    } catch (const Error& error) {
      throw CollectiveError(cat("generate: ", error.what(), " (or none)"));
    }
  }
  // Generation is a single-process job: under a launcher, rank 0 does it and the others wait.
  if (mpi.rank() == 0) {
    const auto where = train::choose_generate_device(device, mixed_precision);
    options.device = where.device;
    options.precision = where.precision;
    std::cerr << where.summary << "\n" << std::flush;
    const auto loaded =
        train::load_model_folder(model_dir, train::FolderHead::language_model, quantized);
    const std::string user = options.prompt;
    if (chat) {
      data::ChatPrompt prompt;
      try {
        prompt = data::chat_prompt(*loaded.tokenizer, system, user);
      } catch (const Error& error) {
        throw Error(cat("--model ", model_dir, ": ", error.what()));
      }
      options.prompt = std::move(prompt.text);
      options.stop_tokens = std::move(prompt.turn_ends);
      options.document_prefix = false;
    }
    const train::Generated generated = train::generate(loaded, options);
    // The output ends with a newline whatever the text ends with (a shell prompt after it
    // starts on its own line); with --chat it is the reply alone.
    std::cout << (chat ? "" : user) << generated.text << "\n" << std::flush;
    // Say why the text is shorter than asked: at temperature 0 an end-of-text right after the
    // prompt would otherwise print the prompt alone, unexplained.
    if (generated.stopped_at_end) {
      std::cerr << "generate: the model ended the "
                << (chat ? "reply (an end-of-turn" : "text (an end-of-text") << " token) after "
                << generated.new_tokens << " of at most " << options.max_new_tokens
                << " new tokens\n";
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  return 0;
}

}  // namespace autotrain::cli
