#include "autotrain/train/resume_point.hpp"

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>

#include "autotrain/core/error.hpp"
#include "autotrain/core/json_integer.hpp"
#include "autotrain/core/strings.hpp"
#include "autotrain/model/config.hpp"

namespace autotrain::train {

using nlohmann::json;

namespace {

const std::string& json_doc(const ckpt::CheckpointInfo& info, const std::string& where,
                            const std::string& name) {
  const auto found = info.json.find(name);
  AT_CHECK(found != info.json.end(), "checkpoint ", where, ": run_state/json/", name,
           " is missing (not written by the autotrain trainer?)");
  return found->second;
}

// The run state must describe a run that can have happened: every step consumed one global
// batch, so the position in the epoch is a whole number of them, and the counts agree.
void check_resume_point(const ResumePoint& point, const ckpt::CheckpointInfo& info,
                        const std::string& where) {
  const auto refuse = [&](const std::string& what) {
    throw CollectiveError(cat("checkpoint ", where, ": run state out of range: ", what,
                              " (altered or damaged; use an earlier checkpoint)"));
  };
  if (point.step < 0) refuse(cat("step ", point.step));
  if (point.global_batch_size < 1) refuse(cat("global_batch_size ", point.global_batch_size));
  if (point.total_steps < 1) refuse(cat("total_steps ", point.total_steps));
  if (point.optimizer_steps < 0 || point.optimizer_steps > point.step) {
    refuse(cat("optimizer steps ", point.optimizer_steps, " for step ", point.step));
  }
  const auto G = static_cast<uint64_t>(point.global_batch_size);
  if (point.position.sample_in_epoch % G != 0 || point.position.sample_in_epoch > (1ull << 53)) {
    refuse(cat("sample_in_epoch ", point.position.sample_in_epoch,
               " is not a whole number of global batches of ", G));
  }
  if (info.consumed_samples != point.step * point.global_batch_size) {
    refuse(cat("consumed_samples ", info.consumed_samples, " for ", point.step,
               " steps of global batch ", point.global_batch_size));
  }
  if (static_cast<uint64_t>(info.epoch) != point.position.epoch) {
    refuse(cat("epoch ", info.epoch, " against the data position's ", point.position.epoch));
  }
}

}  // namespace

ResumePoint parse_resume_point(const ckpt::CheckpointInfo& info, const std::string& where) {
  ResumePoint point;
  point.step = info.step;
  point.world_size = info.world_size;
  point.zero_stage = info.zero_stage;
  std::string key;
  // A field of a run-state document, at its full width and within range.
  const auto integer = [&]<typename T>(const json& doc, const char* field, T lo, T hi) {
    return json_integer<T>(doc.at(field), cat("run_state/json/", key, ": ", field), lo, hi);
  };
  constexpr int kMaxInt = std::numeric_limits<int>::max();
  constexpr long long kMaxLong = std::numeric_limits<long long>::max();
  try {
    key = "model_config";
    point.model = model::model_config_from_json(json::parse(json_doc(info, where, key)));
    key = "data_position";
    const json position = json::parse(json_doc(info, where, key));
    point.position.epoch = integer(position, "epoch", uint64_t{0}, ~uint64_t{0});
    point.position.sample_in_epoch =
        integer(position, "sample_in_epoch", uint64_t{0}, ~uint64_t{0});
    point.global_batch_size = integer(position, "global_batch_size", 1LL, kMaxLong);
    key = "scheduler";
    point.total_steps =
        integer(json::parse(json_doc(info, where, key)), "total_steps", 1LL, kMaxLong);
    key = "optimizer";
    const json optimizer = json::parse(json_doc(info, where, key));
    point.optimizer = parse_optimizer(optimizer.at("kind").get<std::string>(),
                                      cat(where, ": run_state/json/optimizer"));
    point.optimizer_steps = integer(optimizer, "steps", 0LL, kMaxLong);
    key = "training_params";
    point.training_params_json = json_doc(info, where, key);
    key = "base_model";
    if (info.json.count(key) != 0) {
      const json base = json::parse(json_doc(info, where, key));
      point.base_weights = base.at("weights_hash").get<std::string>();
      point.base_folder = base.value("folder", std::string());
    }
    key = "lora";
    if (info.json.count(key) != 0) {
      const json lora = json::parse(json_doc(info, where, key));
      point.lora =
          model::LoraOptions{integer(lora, "r", 1, kMaxInt), lora.at("alpha").get<double>(),
                             lora.at("target_modules").get<std::vector<std::string>>()};
    }
    key = "loss_scaler";
    if (info.json.count(key) != 0) {
      const json scaler = json::parse(json_doc(info, where, key));
      point.loss_scaler.enabled = scaler.at("enabled").get<bool>();
      point.loss_scaler.scale = scaler.at("scale").get<float>();
      point.loss_scaler.good_steps = integer(scaler, "good_steps", 0, kMaxInt);
      point.loss_scaler.skipped_steps = integer(scaler, "skipped_steps", 0LL, kMaxLong);
    }
  } catch (const json::exception& error) {
    throw CollectiveError(
        cat("checkpoint ", where, ": run_state/json/", key, " is malformed (", error.what(), ")"));
  } catch (const CollectiveError&) {
    throw;
  } catch (const Error& error) {  // every rank reads the same documents
    throw CollectiveError(cat("checkpoint ", where, ": ", error.what()));
  }
  check_resume_point(point, info, where);
  return point;
}

}  // namespace autotrain::train
