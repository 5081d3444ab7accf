#include "autotrain/config/sweep.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>

#include "autotrain/core/error.hpp"
#include "autotrain/core/strings.hpp"

namespace autotrain::config {
namespace {

// What a sweep may not vary: the layout of the allocation and the outputs' place.
constexpr std::array<std::string_view, 8> kFixedKeys = {
    "num_models",  "project_name", "num_nodes",    "num_gpus_per_node",
    "master_port", "device",       "comm_backend", "log_level"};

// One value of the sweep at YAML path `path` (e.g. "sweep.lr" or "sweep.runs[1].lr").
struct Setting {
  std::string name;  // the parameter
  std::string path;
  std::string text;
};

class SweepReader {
 public:
  explicit SweepReader(std::string file) : file_(std::move(file)) {}

  std::vector<std::vector<Setting>> read(const YAML::Node& sweep) {
    if (!sweep.IsMap()) {
      throw Error(at("sweep", cat("expected a mapping (parameter: [values], or mode: list with "
                                  "runs), got ",
                                  describe(sweep))));
    }
    std::string mode = "grid";
    if (const YAML::Node node = sweep["mode"]) {
      if (!node.IsScalar() || (node.Scalar() != "grid" && node.Scalar() != "list")) {
        throw Error(at("sweep.mode", cat("expected grid or list, got ", describe(node))));
      }
      mode = node.Scalar();
    }
    return mode == "list" ? read_list(sweep) : read_grid(sweep);
  }

 private:
  std::string at(const std::string& path, const std::string& what) const {
    return cat(file_, ":", path, ": ", what);
  }

  static std::string describe(const YAML::Node& node) {
    if (node.IsMap()) return "a mapping";
    if (node.IsSequence()) return "a list";
    if (node.IsNull()) return "null";
    return "'" + node.Scalar() + "'";
  }

  // The parameter a sweep key names (base_model is YAML's name of `model`).
  std::string parameter(const std::string& key, const std::string& path) const {
    const std::string name = key == "base_model" ? "model" : key;
    if (find_param(name) == nullptr) {
      throw Error(at(path, cat("unknown parameter '", key, "'", did_you_mean(key, param_names()),
                               "; a sweep varies training parameters by their names")));
    }
    if (std::find(kFixedKeys.begin(), kFixedKeys.end(), name) != kFixedKeys.end()) {
      throw Error(at(path, cat("'", key,
                               "' cannot vary between the models of one allocation (a sweep "
                               "varies training parameters, not the job's layout or outputs)")));
    }
    return name;
  }

  Setting scalar(const std::string& name, const YAML::Node& value, const std::string& path) const {
    if (value.IsNull()) return {name, path, ""};
    if (!value.IsScalar()) {
      throw Error(at(path, cat("expected a value, got ", describe(value))));
    }
    return {name, path, value.Scalar()};
  }

  std::vector<std::vector<Setting>> read_grid(const YAML::Node& sweep) const {
    std::vector<std::vector<Setting>> models(1);
    for (const auto& entry : sweep) {
      const std::string key = entry.first.as<std::string>();
      if (key == "mode") continue;
      const std::string path = "sweep." + key;
      if (key == "runs") {
        throw Error(at(path, "runs needs mode: list (a grid lists values per parameter)"));
      }
      const std::string name = parameter(key, path);
      std::vector<Setting> values;
      if (entry.second.IsSequence()) {
        for (size_t i = 0; i < entry.second.size(); ++i) {
          values.push_back(scalar(name, entry.second[i], cat(path, "[", i, "]")));
        }
      } else {
        values.push_back(scalar(name, entry.second, path));
      }
      if (values.empty()) throw Error(at(path, "expected at least one value, got an empty list"));
      std::vector<std::vector<Setting>> product;
      for (const auto& model : models) {
        for (const auto& value : values) {
          product.push_back(model);
          product.back().push_back(value);
        }
      }
      models = std::move(product);
    }
    if (models.front().empty()) {
      throw Error(at("sweep", "names no parameter to vary (e.g. lr: [1e-4, 3e-4])"));
    }
    return models;
  }

  std::vector<std::vector<Setting>> read_list(const YAML::Node& sweep) const {
    for (const auto& entry : sweep) {
      const std::string key = entry.first.as<std::string>();
      if (key != "mode" && key != "runs") {
        throw Error(at("sweep." + key, cat("unknown key '", key,
                                           "' in a list sweep; expected mode and runs (each "
                                           "run a mapping of parameters)")));
      }
    }
    const YAML::Node runs = sweep["runs"];
    if (!runs || !runs.IsSequence() || runs.size() == 0) {
      throw Error(at("sweep.runs", cat("expected a non-empty list of runs, got ",
                                       runs ? describe(runs) : std::string("nothing"))));
    }
    std::vector<std::vector<Setting>> models;
    for (size_t i = 0; i < runs.size(); ++i) {
      const std::string run_path = cat("sweep.runs[", i, "]");
      const YAML::Node run = runs[i];
      if (run.IsNull()) {
        models.emplace_back();  // the baseline: no change
        continue;
      }
      if (!run.IsMap()) {
        throw Error(at(run_path, cat("expected a mapping of parameters, got ", describe(run))));
      }
      std::vector<Setting> settings;
      for (const auto& entry : run) {
        const std::string key = entry.first.as<std::string>();
        const std::string path = run_path + "." + key;
        settings.push_back(scalar(parameter(key, path), entry.second, path));
      }
      models.push_back(std::move(settings));
    }
    return models;
  }

  std::string file_;
};

std::vector<std::vector<Setting>> read_sweep(const std::filesystem::path& yaml) {
  if (yaml.empty()) return {};
  YAML::Node root;
  try {
    root = YAML::LoadFile(yaml.string());
  } catch (const YAML::Exception& error) {
    throw Error(cat(yaml.string(), ":", error.mark.line + 1, ": not valid YAML: ", error.msg));
  }
  if (!root.IsMap() || !root["sweep"]) return {};
  try {
    return SweepReader(yaml.string()).read(root["sweep"]);
  } catch (const YAML::Exception& error) {
    throw Error(cat(yaml.string(), ":", error.mark.line + 1, ": sweep: ", error.msg));
  }
}

}  // namespace

ModelsPlan plan_models(const ConfigInputs& inputs) {
  ResolvedParams base = default_params();
  if (!inputs.training_params.empty()) apply_json_file(base, inputs.training_params);
  if (!inputs.yaml.empty()) apply_yaml_file(base, inputs.yaml);
  apply_flags(base, inputs.flags);
  const int64_t asked = base.params.num_models;
  const std::string asked_from = base.provenance.at("num_models");
  const auto sweep = read_sweep(inputs.yaml);

  ModelsPlan plan;
  plan.base = base.params;
  if (sweep.empty()) {
    const int64_t count = std::max<int64_t>(asked, 1);
    plan.grouped = count > 1;
    plan.source = plan.grouped ? "num_models" : "";
    for (int64_t k = 0; k < count; ++k) {
      ModelPlan model;
      if (plan.grouped) {
        model.changes.push_back(
            {"seed", cat("num_models (model ", k, ": seed + ", k, ")"), cat(base.params.seed + k)});
      }
      plan.models.push_back(std::move(model));
    }
    return plan;
  }
  const std::string source = cat(inputs.yaml.string(), ":sweep");
  if (asked > 0 && static_cast<size_t>(asked) != sweep.size()) {
    throw Error(cat("num_models ", asked, " (", asked_from, ") disagrees with ", source,
                    ", which makes ", sweep.size(), " model(s); leave num_models out or set it to ",
                    sweep.size()));
  }
  for (const auto& settings : sweep) {
    ModelPlan model;
    for (const auto& setting : settings) {
      for (const auto& flag : inputs.flags) {
        if (flag.name == setting.name) {
          throw Error(cat(flag.spelling, ": ", setting.name, " is varied by ", inputs.yaml.string(),
                          ":", setting.path, "; give it in one place"));
        }
      }
      model.changes.push_back(
          {setting.name, cat(inputs.yaml.string(), ":", setting.path), setting.text});
    }
    ResolvedParams checked = base;  // every model's values are checked on every rank, up front
    apply_flags(checked, model.changes);
    plan.models.push_back(std::move(model));
  }
  plan.grouped = true;
  plan.source = source;
  return plan;
}

std::string describe_changes(const ModelPlan& model) {
  std::vector<std::string> parts;
  for (const auto& change : model.changes) parts.push_back(cat(change.name, " ", change.text));
  return parts.empty() ? std::string("-") : join(parts, ", ");
}

}  // namespace autotrain::config
