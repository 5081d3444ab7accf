#include "autotrain/train/sweep.hpp"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <utility>

#include "autotrain/core/error.hpp"
#include "autotrain/core/paths.hpp"
#include "autotrain/core/strings.hpp"

namespace autotrain::train {
namespace {

using nlohmann::ordered_json;

ordered_json optional_number(const std::optional<double>& value) {
  return value ? ordered_json(*value) : ordered_json(nullptr);
}

std::optional<double> read_optional(const nlohmann::json& object, const char* key) {
  if (!object.contains(key) || object.at(key).is_null()) return std::nullopt;
  return object.at(key).get<double>();
}

ordered_json result_json(const ModelResult& result) {
  ordered_json out = {{"model", result.model},
                      {"status", result.status},
                      {"steps", result.steps},
                      {"final_loss", optional_number(result.final_loss)},
                      {"final_val_loss", optional_number(result.final_val_loss)},
                      {"tokens_per_s", result.tokens_per_s}};
  if (!result.error.empty()) out["error"] = result.error;
  return out;
}

// Lower is better: models with a validation loss by it, then those with a train loss only, then
// those without either, failed ones last.
std::pair<int, double> ranking_key(const ModelResult& result) {
  if (result.status == "failed") return {3, 0};
  if (result.final_val_loss) return {0, *result.final_val_loss};
  if (result.final_loss) return {1, *result.final_loss};
  return {2, 0};
}

}  // namespace

std::filesystem::path model_dir(const std::filesystem::path& project, int model) {
  return project / cat("model-", model);
}

std::optional<ModelResult> read_model_result(const std::filesystem::path& dir) {
  std::ifstream in(dir / "result.json");
  if (!in) return std::nullopt;
  try {
    const auto object = nlohmann::json::parse(in);
    ModelResult result;
    result.model = object.at("model").get<int>();
    result.status = object.at("status").get<std::string>();
    result.steps = object.at("steps").get<long long>();
    result.final_loss = read_optional(object, "final_loss");
    result.final_val_loss = read_optional(object, "final_val_loss");
    result.tokens_per_s = object.value("tokens_per_s", 0.0);
    result.error = object.value("error", std::string());
    return result;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;  // half-written by a killed job: the model runs again
  }
}

void write_model_result(const std::filesystem::path& dir, const ModelResult& result) {
  std::filesystem::create_directories(dir);
  write_file_atomically(dir / "result.json", result_json(result).dump(2) + "\n");
}

std::vector<ModelResult> collect_results(const std::filesystem::path& project, int models) {
  std::vector<ModelResult> results;
  for (int k = 0; k < models; ++k) {
    auto result = read_model_result(model_dir(project, k));
    if (!result) {
      result.emplace();
      result->model = k;
    }
    results.push_back(*result);
  }
  return results;
}

void write_sweep_json(const std::filesystem::path& project, const config::ModelsPlan& plan,
                      int ranks_per_model, const std::vector<ModelResult>& results) {
  ordered_json models = ordered_json::array();
  for (size_t k = 0; k < results.size(); ++k) {
    ordered_json changes = ordered_json::object();
    for (const auto& change : plan.models[k].changes) changes[change.name] = change.text;
    ordered_json row = {
        {"model", static_cast<int>(k)},
        {"folder", model_dir(project, static_cast<int>(k)).string()},
        {"ranks",
         {static_cast<int>(k) * ranks_per_model, static_cast<int>(k + 1) * ranks_per_model - 1}},
        {"changes", changes}};
    const ordered_json result = result_json(results[k]);
    for (const auto& [key, value] : result.items()) {
      if (key != "model") row[key] = value;
    }
    models.push_back(row);
  }
  const ordered_json sweep = {
      {"source", plan.source}, {"num_models", results.size()}, {"models", models}};
  std::filesystem::create_directories(project);
  write_file_atomically(project / "sweep.json", sweep.dump(2) + "\n");
}

std::vector<std::string> rank_models(const config::ModelsPlan& plan,
                                     const std::vector<ModelResult>& results) {
  std::vector<const ModelResult*> order;
  for (const auto& result : results) order.push_back(&result);
  std::stable_sort(order.begin(), order.end(), [](const ModelResult* a, const ModelResult* b) {
    return ranking_key(*a) < ranking_key(*b);
  });
  std::vector<std::string> lines;
  for (size_t place = 0; place < order.size(); ++place) {
    const ModelResult& result = *order[place];
    const auto& model = plan.models[static_cast<size_t>(result.model)];
    const auto loss = [](const std::optional<double>& value) {
      return value ? cat(*value) : std::string("n/a");
    };
    lines.push_back(cat("#", place + 1, " model ", result.model, " (",
                        config::describe_changes(model), "): ", result.status, ", validation loss ",
                        loss(result.final_val_loss), ", train loss ", loss(result.final_loss), ", ",
                        result.steps, " steps",
                        result.error.empty() ? std::string() : cat(" | ", result.error)));
  }
  return lines;
}

}  // namespace autotrain::train
