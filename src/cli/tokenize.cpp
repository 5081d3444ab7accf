// `autotrain tokenize`: what a tokenizer makes of a text, without training: the ids, the
// tokens they spell and the decoded text; or, for a JSON list of texts, one JSON object per
// text in the layout the tests compare with Hugging Face's tokenizers
// (tests/data/hf_reference/reference.mjs). Runs without MPI.
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "autotrain/cli/commands.hpp"
#include "autotrain/cli/options.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/data/tokenizer.hpp"

namespace autotrain::cli {
namespace {

using nlohmann::json;

std::vector<data::TokenId> encode(const data::Tokenizer& tokenizer, const std::string& text,
                                  bool add_special_tokens) {
  // Hugging Face's add_special_tokens: the post-processor's template around the text.
  const data::DocumentFrame frame = tokenizer.document_frame(false);
  std::vector<data::TokenId> ids;
  if (add_special_tokens) ids = frame.prefix;
  tokenizer.encode_append(text, ids, data::TextPosition::start);
  if (add_special_tokens) ids.insert(ids.end(), frame.suffix.begin(), frame.suffix.end());
  return ids;
}

json describe(const data::Tokenizer& tokenizer, const std::string& text) {
  const auto ids_special = encode(tokenizer, text, true);
  return {{"text", text},
          {"ids", encode(tokenizer, text, false)},
          {"ids_special", ids_special},
          {"decoded", tokenizer.decode(ids_special)}};
}

void write_all(const data::Tokenizer& tokenizer, const std::string& input,
               const std::string& output) {
  std::ifstream in(input);
  AT_CHECK(in, "tokenize: cannot open ", input);
  json texts;
  try {
    texts = json::parse(in);
  } catch (const json::exception& error) {
    throw Error(cat("tokenize: ", input, ": not valid JSON (", error.what(), ")"));
  }
  AT_CHECK(texts.is_array(), "tokenize: ", input, ": expected a JSON list of strings");
  std::ofstream out(output);
  AT_CHECK(out, "tokenize: cannot write ", output);
  out << "[\n";
  for (size_t i = 0; i < texts.size(); ++i) {
    AT_CHECK(texts[i].is_string(), "tokenize: ", input, "[", i, "]: expected a string");
    out << describe(tokenizer, texts[i].get<std::string>()).dump()
        << (i + 1 < texts.size() ? ",\n" : "\n");
  }
  out << "]\n";
  AT_CHECK(out.flush(), "tokenize: writing ", output, " failed");
}

}  // namespace

int run_tokenize(const std::vector<std::string>& args) {
  namespace po = boost::program_options;
  bool help = false;
  bool add_special_tokens = false;
  bool parse_special_tokens = true;
  std::string tokenizer_spec = "gpt2";
  std::string text;
  std::string input;
  std::string output;
  po::options_description description("options");
  description.add_options()("help,h", po::bool_switch(&help), "show this help")(
      "tokenizer", po::value(&tokenizer_spec),
      "gpt2 (default), byte, a tokenizer.json or a model folder")(
      "text", po::value(&text), "the text to tokenize")("input", po::value(&input),
                                                        "a JSON list of texts (with --output)")(
      "output", po::value(&output), "where --input's results go, as JSON")(
      "add-special-tokens", po::bool_switch(&add_special_tokens),
      "the tokenizer's template around the text (Llama 2's <s>), as Hugging Face's default")(
      "parse-special-tokens", po::value(&parse_special_tokens),
      "special tokens written in the text become their ids (default true)");
  parse_command_options("tokenize", description, args);
  if (help) {
    std::cout
        << "usage: autotrain tokenize [--tokenizer T] --text TEXT [--add-special-tokens]\n"
           "       autotrain tokenize [--tokenizer T] --input TEXTS.json --output OUT.json\n\n"
        << description;
    return 0;
  }
  const auto tokenizer = data::make_tokenizer(tokenizer_spec, {{}, parse_special_tokens});
  if (!input.empty()) {
    AT_CHECK(!output.empty(), "tokenize: --input needs --output");
    write_all(*tokenizer, input, output);
    return 0;
  }
  const auto ids = encode(*tokenizer, text, add_special_tokens);
  std::cout << "ids:";
  for (const auto id : ids) std::cout << ' ' << id;
  std::cout << "\ntokens: " << ids.size() << " (vocabulary " << tokenizer->vocab_size() << ")\n";
  std::cout << "decoded: " << tokenizer->decode(ids) << "\n";
  return 0;
}

}  // namespace autotrain::cli
