// The three sources of parameters: training_params.json (flat object), YAML in AutoTrain's
// layout, and command-line flags. Each one converts its values to the parameter's type, checks
// them against the table, and records where they came from.
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <set>

#include "autotrain/config/load.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/strings.hpp"
#include "foreign_keys.hpp"

namespace autotrain::config {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The parameter whose value is a JSON object of keywords (a mapping in YAML).
constexpr std::string_view kKeywordsParam = "lr_scheduler_kwargs";

// A YAML mapping of scalars as a JSON object: numbers and booleans typed as YAML 1.2 reads them.
std::string yaml_mapping_as_json(const YAML::Node& mapping, const Where& where) {
  json out = json::object();
  for (const auto& entry : mapping) {
    const std::string key = entry.first.as<std::string>();
    if (!entry.second.IsScalar()) {
      throw Error(where.message(cat("'", key, "': expected a number, a string or true/false")));
    }
    const std::string text = entry.second.Scalar();
    try {
      size_t used = 0;
      const long long integer = std::stoll(text, &used);
      if (used == text.size()) {
        out[key] = integer;
        continue;
      }
      const double number = std::stod(text, &used);
      if (used == text.size()) {
        out[key] = number;
        continue;
      }
    } catch (const std::exception&) {
    }
    if (text == "true" || text == "false") {
      out[key] = text == "true";
    } else {
      out[key] = text;
    }
  }
  return out.dump();
}

// Finds the parameter `name`, or explains why there is none. Returns nullptr for a foreign key
// that is ignored (after adding a note): a harmless one, or one whose `value` (as written)
// leaves its feature off.
const ParamSpec* param_or_throw(ResolvedParams& into, std::string_view name, const Where& where,
                                const std::string& value,
                                const std::vector<std::string>& extra_candidates = {}) {
  if (const ParamSpec* spec = find_param(name)) return spec;
  if (const ForeignKey* foreign = find_foreign_key(to_snake_case(name))) {
    if (foreign->harmless_with(value)) {
      into.notes.push_back(where.message(cat("ignored: ", foreign->why)));
      return nullptr;
    }
    throw Error(where.message(cat("AutoTrain's '", name, "': ", foreign->why)));
  }
  std::vector<std::string> candidates = param_names();
  candidates.insert(candidates.end(), extra_candidates.begin(), extra_candidates.end());
  const std::string hint = foreign_name_hint(name);
  throw Error(where.message(
      cat("unknown parameter '", name, "'", hint.empty() ? did_you_mean(name, candidates) : hint)));
}

// A source's errors, gathered so that one run reports all of them (one line each).
class Problems {
 public:
  template <typename Check>
  void check(Check&& check) {
    try {
      check();
    } catch (const Error& error) {
      lines_.emplace_back(error.what());
    }
  }
  void throw_if_any() const {
    if (!lines_.empty()) throw Error(join(lines_, "\n"));
  }

 private:
  std::vector<std::string> lines_;
};

void assign(ResolvedParams& into, const ParamSpec& spec, const ParamValue& value,
            std::string source) {
  set_value(into.params, spec, value);
  into.provenance[std::string(spec.name)] = std::move(source);
}

std::string describe_json(const json& value) {
  if (value.is_string()) return "'" + value.get<std::string>() + "'";
  if (value.is_null()) return "null";
  if (value.is_object()) return "an object";
  if (value.is_array()) return "a list";
  return value.dump();
}

ParamValue from_json(const ParamSpec& spec, const json& value, const Where& where) {
  auto wrong_type = [&](std::string_view expected) {
    return Error(where.message(cat("expected ", expected, ", got ", describe_json(value))));
  };
  switch (spec.type()) {
    case ParamType::integer:
      // AutoTrain writes None as null (max_completion_length): the parameter's "not given".
      if (value.is_null() && spec.constraint.sentinel) return *spec.constraint.sentinel;
      if (value.is_number_integer() &&
          !(value.is_number_unsigned() && value.get<uint64_t>() > uint64_t{INT64_MAX})) {
        return check_value(spec, value.get<int64_t>(), where);
      }
      if (value.is_number_float()) {
        const double number = value.get<double>();
        if (std::trunc(number) == number && std::fabs(number) < 9.2e18) {
          return check_value(spec, static_cast<int64_t>(number), where);
        }
      }
      throw wrong_type("an integer");
    case ParamType::number:
      if (!value.is_number()) throw wrong_type("a number");
      return check_value(spec, value.get<double>(), where);
    case ParamType::boolean:
      if (!value.is_boolean()) throw wrong_type("true or false");
      return value.get<bool>();
    case ParamType::string:
      // AutoTrain writes None as null (valid_split, mixed_precision, distributed_backend).
      if (value.is_null()) return check_value(spec, std::string(), where);
      if (value.is_object() && spec.name == kKeywordsParam) {
        return check_value(spec, value.dump(), where);
      }
      if (!value.is_string()) throw wrong_type("a string");
      return check_value(spec, value.get<std::string>(), where);
  }
  return {};
}

// ${NAME} anywhere in a YAML value is replaced by the environment variable NAME.
std::string substitute_env(const std::string& text, const Where& where) {
  std::string out;
  size_t position = 0;
  while (true) {
    const size_t open = text.find("${", position);
    if (open == std::string::npos) break;
    const size_t close = text.find('}', open);
    if (close == std::string::npos) {
      throw Error(where.message(cat("unterminated '${' in '", text, "'")));
    }
    const std::string name = text.substr(open + 2, close - open - 2);
    const char* value = name.empty() ? nullptr : std::getenv(name.c_str());
    if (value == nullptr) {
      throw Error(
          where.message(cat("environment variable '", name, "' (in '", text, "') is not set")));
    }
    out += text.substr(position, open - position);
    out += value;
    position = close + 1;
  }
  out += text.substr(position);
  return out;
}

std::string_view expected_type(ParamType type) {
  switch (type) {
    case ParamType::integer:
      return "an integer";
    case ParamType::number:
      return "a number";
    case ParamType::boolean:
      return "true or false";
    case ParamType::string:
      return "a string";
  }
  return "?";
}

std::string describe_yaml(const YAML::Node& node) {
  if (node.IsMap()) return "a mapping";
  if (node.IsSequence()) return "a list";
  if (node.IsNull()) return "null";
  return "'" + node.Scalar() + "'";
}

class YamlReader {
 public:
  YamlReader(ResolvedParams& into, std::string file) : into_(into), file_(std::move(file)) {}

  void read(const YAML::Node& root) {
    if (root.IsNull()) return;
    if (!root.IsMap()) {
      throw Error(cat(file_,
                      ": expected a mapping of settings (task, base_model, data, params, "
                      "distributed, ...), got ",
                      describe_yaml(root)));
    }
    static const std::vector<std::string> kTopKeys = {
        "task", "base_model", "project_name", "data",  "params",   "distributed",
        "log",  "backend",    "hub",          "sweep", "deepspeed"};
    Problems problems;
    for (const auto& entry : root) {
      problems.check([&] {
        const std::string key = entry.first.as<std::string>();
        const YAML::Node& value = entry.second;
        if (key == "task") {
          read_task(value);
        } else if (key == "base_model") {
          set("model", value, "base_model");
        } else if (key == "project_name") {
          set("project_name", value, "project_name");
        } else if (key == "data") {
          read_data(value);
        } else if (key == "params") {
          read_params(value);
        } else if (key == "distributed") {
          read_distributed(value);
        } else if (key == "log") {
          set("log", value, "log");
        } else if (key == "deepspeed") {
          set("deepspeed", value, "deepspeed");  // transformers' name for the DeepSpeed JSON
        } else if (key == "backend") {
          into_.notes.push_back(where(key).message(cat("ignored: ", find_foreign_key(key)->why)));
        } else if (key == "sweep") {
          // The models of one allocation: read by plan_models (sweep.hpp), applied per model.
        } else if (key == "hub") {
          into_.notes.push_back(where(key).message(
              "ignored: the model is exported to <project_name>/, never pushed"));
        } else {
          throw Error(where(key).message(
              cat("unknown key '", key, "'", did_you_mean(key, kTopKeys),
                  "; expected task, base_model, project_name, data, params, distributed, sweep, "
                  "deepspeed")));
        }
      });
    }
    problems.check([&] { apply_task_trainer(); });
    problems.throw_if_any();
  }

 private:
  Where where(const std::string& key) const { return Where{key, file_}; }

  void expect_map(const YAML::Node& node, const std::string& key, std::string_view keys) {
    if (!node.IsMap()) {
      throw Error(
          where(key).message(cat("expected a mapping (", keys, "), got ", describe_yaml(node))));
    }
  }

  void read_task(const YAML::Node& value) {
    if (!value.IsScalar()) {
      throw Error(where("task").message(cat("expected a string, got ", describe_yaml(value))));
    }
    const std::string task = substitute_env(value.Scalar(), where("task"));
    // AutoTrain's LLM tasks: the generic one and sft are causal language modelling (one
    // objective); llm-dpo, llm-orpo and llm-reward name their trainer.
    static const std::vector<std::string> kTasks = {"llm",     "llm-generic", "llm-sft",   "lm",
                                                    "llm-dpo", "llm-orpo",    "llm-reward"};
    if (std::find(kTasks.begin(), kTasks.end(), task) == kTasks.end()) {
      throw Error(where("task").message(cat("expected ", join(kTasks, "|"),
                                            " (AutoTrain's LLM tasks), got '", task, "'",
                                            did_you_mean(task, kTasks))));
    }
    if (task == "llm-dpo" || task == "llm-orpo" || task == "llm-reward") {
      task_trainer_ = task.substr(4);
    }
  }

  // task llm-dpo, llm-orpo, llm-reward: the trainer, unless params.trainer gives it (then the
  // two must agree).
  void apply_task_trainer() {
    if (task_trainer_.empty()) return;
    if (seen_.count("trainer") == 0) {
      set("trainer", YAML::Node(task_trainer_), "task");
    } else if (into_.params.trainer != task_trainer_) {
      throw Error(where(seen_.at("trainer"))
                      .message(cat("trainer ", into_.params.trainer, " contradicts task llm-",
                                   task_trainer_, "; give one of them")));
    }
  }

  void read_data(const YAML::Node& data) {
    expect_map(data, "data", "path, train_split, valid_split, column_mapping");
    static const std::vector<std::string> kDataKeys = {"path", "train_split", "valid_split",
                                                       "column_mapping"};
    for (const auto& entry : data) {
      const std::string key = entry.first.as<std::string>();
      const std::string path = "data." + key;
      if (key == "path") {
        set("data_path", entry.second, path);
      } else if (key == "train_split" || key == "valid_split") {
        set(key, entry.second, path);
      } else if (key == "chat_template") {
        set("chat_template", entry.second, path);  // AutoTrain's data.chat_template
      } else if (key == "column_mapping") {
        static const std::vector<std::string> kColumns = {"text_column", "prompt_text_column",
                                                          "rejected_text_column"};
        expect_map(entry.second, path, join(kColumns, ", "));
        for (const auto& column : entry.second) {
          const std::string name = column.first.as<std::string>();
          if (std::find(kColumns.begin(), kColumns.end(), name) == kColumns.end()) {
            throw Error(
                where(path + "." + name)
                    .message(cat("unknown column '", name, "'", did_you_mean(name, kColumns),
                                 "; expected ", join(kColumns, ", "))));
          }
          set(name, column.second, path + "." + name);
        }
      } else {
        throw Error(where(path).message(cat("unknown key '", key, "'", did_you_mean(key, kDataKeys),
                                            "; expected ", join(kDataKeys, ", "))));
      }
    }
  }

  void read_params(const YAML::Node& params) {
    if (params.IsNull()) return;
    expect_map(params, "params", "any parameter, e.g. lr, batch_size");
    Problems problems;
    for (const auto& entry : params) {
      problems.check([&] {
        const std::string key = entry.first.as<std::string>();
        const std::string path = "params." + key;
        const std::string text = entry.second.IsScalar() ? entry.second.Scalar()
                                 : entry.second.IsNull() ? std::string()
                                                         : std::string("(a collection)");
        if (const ParamSpec* spec = param_or_throw(into_, key, where(path), text)) {
          set(std::string(spec->name), entry.second, path);
        }
      });
    }
    problems.throw_if_any();
  }

  void read_distributed(const YAML::Node& distributed) {
    expect_map(distributed, "distributed", "backend, num_nodes, num_gpus_per_node");
    static const std::vector<std::string> kKeys = {"backend", "num_nodes", "num_gpus_per_node"};
    for (const auto& entry : distributed) {
      const std::string key = entry.first.as<std::string>();
      const std::string path = "distributed." + key;
      if (key == "backend") {
        set("comm_backend", entry.second, path);
      } else if (key == "num_nodes" || key == "num_gpus_per_node") {
        set(key, entry.second, path);
      } else {
        throw Error(where(path).message(cat("unknown key '", key, "'", did_you_mean(key, kKeys),
                                            "; expected ", join(kKeys, ", "))));
      }
    }
  }

  // Sets parameter `name` from the YAML value at `path` (e.g. "params.lr").
  void set(const std::string& name, const YAML::Node& value, const std::string& path) {
    const ParamSpec& spec = *find_param(name);
    const Where at = where(path);
    if (auto earlier = seen_.find(name); earlier != seen_.end()) {
      throw Error(
          at.message(cat("'", name, "' is already given as ", earlier->second, "; give it once")));
    }
    seen_.emplace(name, path);
    ParamValue parsed;
    if (value.IsNull() && spec.type() == ParamType::integer && spec.constraint.sentinel) {
      parsed = *spec.constraint.sentinel;
    } else if (value.IsNull()) {
      if (spec.type() != ParamType::string) {
        throw Error(at.message(cat("expected ", expected_type(spec.type()), ", got null")));
      }
      parsed = check_value(spec, std::string(), at);
    } else if (value.IsMap() && spec.name == kKeywordsParam) {
      parsed = check_value(spec, yaml_mapping_as_json(value, at), at);
    } else if (!value.IsScalar()) {
      throw Error(
          at.message(cat("expected ", expected_type(spec.type()), ", got ", describe_yaml(value))));
    } else {
      parsed = parse_text(spec, substitute_env(value.Scalar(), at), at);
    }
    assign(into_, spec, parsed, cat(file_, ":", path));
  }

  ResolvedParams& into_;
  std::string file_;
  std::map<std::string, std::string> seen_;  // parameter -> YAML path that set it
  std::string task_trainer_;                 // what task names: dpo, orpo, reward, or none
};

void expect_regular_file(const fs::path& path, std::string_view what) {
  std::error_code error;
  if (!fs::is_regular_file(path, error)) {
    throw Error(cat(what, " '", path.string(), "': no such file"));
  }
}

}  // namespace

ResolvedParams default_params() {
  ResolvedParams resolved;
  for (const auto& spec : param_specs()) resolved.provenance[std::string(spec.name)] = "default";
  return resolved;
}

void apply_json_file(ResolvedParams& into, const fs::path& path) {
  expect_regular_file(path, "--training-config");
  std::ifstream in(path);
  AT_CHECK(in, "--training-config '", path.string(), "': cannot open for reading");
  json root;
  try {
    root = json::parse(in);
  } catch (const json::exception& error) {
    throw Error(cat(path.string(), ": not valid JSON: ", error.what()));
  }
  if (!root.is_object()) {
    throw Error(
        cat(path.string(), ": expected a JSON object of parameters, got ", describe_json(root)));
  }
  Problems problems;
  for (const auto& item : root.items()) {
    // Named, not bound: clang 14 (the fuzz build) cannot capture structured bindings.
    const std::string& key = item.key();
    const json& value = item.value();
    problems.check([&] {
      const Where at{key, path.string()};
      const std::string text = value.is_string() ? value.get<std::string>()
                               : value.is_null() ? std::string()
                                                 : value.dump();
      if (const ParamSpec* spec = param_or_throw(into, key, at, text)) {
        assign(into, *spec, from_json(*spec, value, at), path.string());
      }
    });
  }
  problems.throw_if_any();
}

void apply_yaml_file(ResolvedParams& into, const fs::path& path) {
  expect_regular_file(path, "--config");
  YAML::Node root;
  try {
    root = YAML::LoadFile(path.string());
  } catch (const YAML::Exception& error) {
    throw Error(cat(path.string(), ":", error.mark.line + 1, ":", error.mark.column + 1,
                    ": not valid YAML: ", error.msg));
  }
  try {
    YamlReader(into, path.string()).read(root);
  } catch (const YAML::Exception& error) {
    // A key that is not a string, and other shapes the reader does not expect.
    throw Error(cat(path.string(), ":", error.mark.line + 1, ": ", error.msg));
  }
}

void apply_flags(ResolvedParams& into, const std::vector<FlagValue>& flags) {
  std::map<std::string, std::string> seen;
  Problems problems;
  for (const auto& flag : flags) {
    problems.check([&] {
      const Where at{flag.spelling, ""};
      const ParamSpec* spec = param_or_throw(into, flag.name, at, flag.text);
      if (spec == nullptr) return;  // AutoTrain's, noted
      if (auto earlier = seen.find(std::string(spec->name)); earlier != seen.end()) {
        throw Error(at.message(cat("already given as ", earlier->second, "; give it once")));
      }
      seen.emplace(std::string(spec->name), flag.spelling);
      assign(into, *spec, parse_text(*spec, flag.text, at), flag.spelling);
    });
  }
  problems.throw_if_any();
}

}  // namespace autotrain::config
