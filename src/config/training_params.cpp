#include "autotrain/config/training_params.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "autotrain/core/error.hpp"
#include "autotrain/core/json_stream.hpp"
#include "autotrain/core/strings.hpp"
#include "autotrain/core/utf8.hpp"

namespace autotrain::config {

namespace {

std::string number_text(double value) {
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, result.ptr);
}

std::string choice_text(const std::string& choice) {
  return choice.empty() ? "\"\"" : choice;
}

std::string quoted(const ParamValue& value) {
  if (std::holds_alternative<std::string>(value)) {
    return "'" + std::get<std::string>(value) + "'";
  }
  return format_value(value);
}

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

std::string Constraint::describe() const {
  if (!choices.empty()) {
    std::vector<std::string> shown;
    for (const auto& choice : choices) shown.push_back(choice_text(choice));
    return join(shown, "|");
  }
  if (rule != nullptr) return std::string(rule_text);
  std::string range;
  if (min && max) {
    range = cat("in [", number_text(*min), ", ", number_text(*max), "]");
  } else if (min) {
    range = cat(min_exclusive ? "> " : ">= ", number_text(*min));
  } else if (max) {
    range = cat("<= ", number_text(*max));
  }
  if (sentinel) return range.empty() ? std::to_string(*sentinel) : cat(*sentinel, " or ", range);
  return range.empty() ? "any" : range;
}

Constraint any_value() {
  return {};
}

Constraint at_least(double min) {
  Constraint constraint;
  constraint.min = min;
  return constraint;
}

Constraint greater_than(double min) {
  Constraint constraint = at_least(min);
  constraint.min_exclusive = true;
  return constraint;
}

Constraint between(double min, double max) {
  Constraint constraint = at_least(min);
  constraint.max = max;
  return constraint;
}

Constraint derived_or(int64_t sentinel, Constraint rest) {
  rest.sentinel = sentinel;
  return rest;
}

Constraint one_of(std::vector<std::string> choices,
                  std::vector<std::pair<std::string, std::string>> aliases) {
  Constraint constraint;
  constraint.choices = std::move(choices);
  constraint.aliases = std::move(aliases);
  return constraint;
}

Constraint with_rule(std::string (*rule)(std::string_view value), std::string_view rule_text) {
  Constraint constraint;
  constraint.rule = rule;
  constraint.rule_text = rule_text;
  return constraint;
}

std::string project_name_rule(std::string_view value) {
  if (value.empty()) return "a non-empty name";
  if (value.size() > 50) return cat("at most 50 characters (it has ", value.size(), ")");
  // A leading hyphen would read as an option wherever the name is passed on (`rm -rf`, the
  // printed next command).
  if (value.front() == '-') return "a name that starts with a letter or digit, not '-'";
  for (char c : value) {
    if (std::isalnum(static_cast<unsigned char>(c)) == 0 && c != '-') {
      return cat("letters, digits and hyphens only ('", c, "' is not allowed)");
    }
  }
  return {};
}

namespace {

// A tokenizer given as a path: the tokenizer.json file itself or the folder holding it.
std::filesystem::path tokenizer_json_path(std::string_view value) {
  const std::filesystem::path path(value);
  std::error_code error;
  return std::filesystem::is_directory(path, error) ? path / "tokenizer.json" : path;
}

}  // namespace

std::string tokenizer_rule(std::string_view value) {
  if (value == "gpt2" || value == "byte") return {};
  std::error_code error;
  const std::filesystem::path file = tokenizer_json_path(value);
  if (std::filesystem::is_regular_file(file, error)) return {};
  if (std::filesystem::is_directory(value, error)) {
    return cat("a folder holding tokenizer.json (", file.string(), " does not exist)");
  }
  return cat("gpt2, byte, a tokenizer.json file or a folder holding one ('", value,
             "' does not exist", did_you_mean(value, {"gpt2", "byte"}), ")");
}

std::string model_rule(std::string_view value) {
  if (value.empty()) return "a base model (it is empty)";
  for (const char c : value) {
    if (c == ' ' || c == '\t' || c == '\n') return cat("no spaces in '", value, "'");
  }
  return {};
}

uint64_t parse_byte_size(std::string_view value, std::string_view what) {
  static const std::pair<std::string_view, double> kUnits[] = {
      {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0},
      {"KB", 1e3},     {"MB", 1e6},        {"GB", 1e9},           {"TB", 1e12},
      {"B", 1.0},      {"", 1.0}};
  double number = 0;
  const auto result = std::from_chars(value.data(), value.data() + value.size(), number);
  if (result.ec == std::errc() && std::isfinite(number) && number > 0) {
    const std::string_view unit = value.substr(static_cast<size_t>(result.ptr - value.data()));
    for (const auto& [name, scale] : kUnits) {
      if (unit == name && number * scale >= 1 && number * scale < 1.8e19) {
        return static_cast<uint64_t>(number * scale);
      }
    }
  }
  throw Error(cat(what, ": expected ", kByteSizeRule, ", got '", value, "'"));
}

std::string byte_size_rule(std::string_view value) {
  try {
    parse_byte_size(value, "size");
  } catch (const Error&) {
    return cat("a size such as 5GB, 500MB or 2GiB, not '", value, "'");
  }
  return {};
}

std::string foreign_name_hint(std::string_view name) {
  // Names users bring from transformers' TrainingArguments and AutoTrain's CLI.
  static const std::pair<std::string_view, std::string_view> kForeignNames[] = {
      {"save_steps", "checkpoint_every"}, {"learning_rate", "lr"},
      {"num_train_epochs", "epochs"},     {"per_device_train_batch_size", "batch_size"},
      {"train_batch_size", "batch_size"}, {"gradient_accumulation_steps", "gradient_accumulation"},
      {"max_seq_length", "block_size"},   {"evaluation_strategy", "eval_strategy"},
      {"lr_scheduler_type", "scheduler"}, {"optim", "optimizer"},
      {"bf16", "mixed_precision"},        {"fp16", "mixed_precision"},
      {"output_dir", "project_name"},
  };
  std::string snake = to_snake_case(name);
  while (snake.starts_with("_")) snake.erase(0, 1);  // "--save-steps" -> "save_steps"
  for (const auto& [foreign, ours] : kForeignNames) {
    if (snake == foreign) {
      const bool flag = name.starts_with("--");
      return cat(" (did you mean '", flag ? "--" + to_kebab_case(ours) : std::string(ours),
                 "'? that is what transformers and AutoTrain call ", foreign, ")");
    }
  }
  return {};
}

const std::vector<ParamSpec>& param_specs() {
  static const std::vector<ParamSpec> specs = {
#define AUTOTRAIN_SPEC_ROW(type, name, default_value, constraint, doc) \
  ParamSpec{#name, &TrainingParams::name, constraint, doc},
      AUTOTRAIN_TRAINING_PARAMS(AUTOTRAIN_SPEC_ROW)
#undef AUTOTRAIN_SPEC_ROW
  };
  return specs;
}

const ParamSpec* find_param(std::string_view name) {
  const std::string snake = to_snake_case(name);
  for (const auto& spec : param_specs()) {
    if (spec.name == snake) return &spec;
  }
  return nullptr;
}

const std::vector<std::string>& param_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& spec : param_specs()) out.emplace_back(spec.name);
    return out;
  }();
  return names;
}

std::string_view type_name(ParamType type) {
  switch (type) {
    case ParamType::integer:
      return "integer";
    case ParamType::number:
      return "number";
    case ParamType::boolean:
      return "boolean";
    case ParamType::string:
      return "string";
  }
  return "?";
}

ParamValue get_value(const TrainingParams& params, const ParamSpec& spec) {
  return std::visit([&](auto member) -> ParamValue { return params.*member; }, spec.member);
}

void set_value(TrainingParams& params, const ParamSpec& spec, const ParamValue& value) {
  std::visit(
      [&](auto member) {
        using Field = std::remove_reference_t<decltype(params.*member)>;
        AT_CHECK(std::holds_alternative<Field>(value), "internal: parameter ", spec.name,
                 " set with a ", type_name(static_cast<ParamType>(value.index())), " value");
        params.*member = std::get<Field>(value);
      },
      spec.member);
}

std::string format_value(const ParamValue& value) {
  switch (static_cast<ParamType>(value.index())) {
    case ParamType::integer:
      return std::to_string(std::get<int64_t>(value));
    case ParamType::number:
      return number_text(std::get<double>(value));
    case ParamType::boolean:
      return std::get<bool>(value) ? "true" : "false";
    case ParamType::string:
      return choice_text(std::get<std::string>(value));
  }
  return "?";
}

std::string Where::message(std::string_view what) const {
  return file.empty() ? cat(key, ": ", what) : cat(key, ": ", what, " in ", file);
}

ParamValue check_value(const ParamSpec& spec, ParamValue value, const Where& where) {
  const Constraint& constraint = spec.constraint;
  if (auto* text = std::get_if<std::string>(&value)) {
    // Every value is written back as JSON (training_params.json, checkpoints): it must be text.
    if (const size_t bad = utf8::invalid_utf8_offset(*text); bad != std::string::npos) {
      throw Error(where.message(cat("expected UTF-8 text, got a value with the invalid byte 0x",
                                    std::hex, static_cast<int>(static_cast<uint8_t>((*text)[bad])),
                                    std::dec, " at offset ", bad)));
    }
    if (!constraint.choices.empty()) {
      if (std::find(constraint.choices.begin(), constraint.choices.end(), *text) !=
          constraint.choices.end()) {
        return value;
      }
      for (const auto& [alias, choice] : constraint.aliases) {
        if (alias == *text) return choice;
      }
      throw Error(where.message(cat("expected ", constraint.describe(), ", got '", *text, "'",
                                    did_you_mean(*text, constraint.choices))));
    }
    if (constraint.rule != nullptr) {
      const std::string problem = constraint.rule(*text);
      if (!problem.empty()) {
        throw Error(where.message(cat("expected ", problem, ", got '", *text, "'")));
      }
    }
    return value;
  }
  if (std::holds_alternative<bool>(value)) return value;

  const bool integer = std::holds_alternative<int64_t>(value);
  const double number =
      integer ? static_cast<double>(std::get<int64_t>(value)) : std::get<double>(value);
  if (integer && constraint.sentinel && std::get<int64_t>(value) == *constraint.sentinel) {
    return value;
  }
  const bool below = constraint.min && (constraint.min_exclusive ? number <= *constraint.min
                                                                 : number < *constraint.min);
  const bool above = constraint.max && number > *constraint.max;
  if (!std::isfinite(number) || below || above) {
    throw Error(where.message(cat("expected ", constraint.describe(), ", got ", quoted(value))));
  }
  return value;
}

ParamValue parse_text(const ParamSpec& spec, std::string_view text, const Where& where) {
  const std::string trimmed = trim(text);
  std::string_view digits = trimmed;
  if (!digits.empty() && digits.front() == '+') digits.remove_prefix(1);
  const char* first = digits.data();
  const char* last = digits.data() + digits.size();

  switch (spec.type()) {
    case ParamType::integer: {
      int64_t integer = 0;
      auto result = std::from_chars(first, last, integer);
      if (!digits.empty() && result.ec == std::errc() && result.ptr == last) {
        return check_value(spec, integer, where);
      }
      // "5e8" is a natural way to write a bucket size; accept it when it is a whole number.
      double number = 0;
      auto as_double = std::from_chars(first, last, number);
      if (!digits.empty() && as_double.ec == std::errc() && as_double.ptr == last &&
          std::isfinite(number) && std::trunc(number) == number && std::fabs(number) < 9.2e18) {
        return check_value(spec, static_cast<int64_t>(number), where);
      }
      throw Error(where.message(cat("expected an integer, got '", text, "'")));
    }
    case ParamType::number: {
      double number = 0;
      auto result = std::from_chars(first, last, number);
      if (digits.empty() || result.ec != std::errc() || result.ptr != last ||
          !std::isfinite(number)) {
        throw Error(where.message(cat("expected a number, got '", text, "'")));
      }
      return check_value(spec, number, where);
    }
    case ParamType::boolean: {
      const std::string word = lower(trimmed);
      if (word == "true" || word == "yes" || word == "on" || word == "1") return true;
      if (word == "false" || word == "no" || word == "off" || word == "0") return false;
      throw Error(where.message(cat("expected true or false, got '", text, "'")));
    }
    case ParamType::string:
      return check_value(spec, std::string(text), where);
  }
  return {};
}

const ModelPreset* find_model_preset(std::string_view model) {
  static const ModelPreset presets[] = {
      {"gpt2", 12, 12, 768, 1024},
      {"gpt2-medium", 24, 16, 1024, 1024},
      {"gpt2-large", 36, 20, 1280, 1024},
      {"gpt2-xl", 48, 25, 1600, 1024},
      {"tiny", 2, 2, 64, 128},
  };
  if (model.starts_with("openai-community/")) model.remove_prefix(17);
  for (const auto& preset : presets) {
    if (preset.name == model) return &preset;
  }
  return nullptr;
}

const ModelPreset& model_preset(std::string_view model) {
  if (const ModelPreset* preset = find_model_preset(model)) return *preset;
  throw Error(cat(
      "model: expected a model folder, a Hub id in the Hugging Face cache or a preset "
      "(gpt2, gpt2-medium, gpt2-large, gpt2-xl, tiny), got '",
      model, "'", did_you_mean(model, {"gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl", "tiny"})));
}

int64_t tokenizer_vocab_size(std::string_view tokenizer) {
  if (tokenizer == "gpt2") return 50257;
  if (tokenizer == "byte") return 256;
  // The data layer reads the whole tokenizer; the configuration only needs the largest id, so
  // the vocab's entries stream past and the merges are skipped (core/json_stream.hpp).
  const std::filesystem::path file = tokenizer_json_path(tokenizer);
  std::ifstream in(file, std::ios::binary);
  AT_CHECK(in, "tokenizer: cannot open ", file.string());
  const std::string text{std::istreambuf_iterator<char>(in), {}};
  int64_t size = 0;
  const auto take = [&](const nlohmann::json& id) {
    if (id.is_number_integer()) size = std::max(size, id.get<int64_t>() + 1);
  };
  nlohmann::json json;
  try {
    json = parse_json_streaming(
        text,
        {{{"model", "vocab"}, true, [&](const std::string&, nlohmann::json& id) { take(id); }},
         {{"model", "merges"}, false, [](const std::string&, nlohmann::json&) {}}});
  } catch (const JsonSyntaxError& error) {
    throw Error(cat(file.string(), ": not valid JSON (", error.what(), ")"));
  }
  if (json.contains("added_tokens") && json["added_tokens"].is_array()) {
    for (const auto& token : json["added_tokens"])
      if (token.is_object() && token.contains("id")) take(token["id"]);
  }
  AT_CHECK(size > 0, file.string(), ": has no vocabulary (model.vocab)");
  return size;
}

}  // namespace autotrain::config
