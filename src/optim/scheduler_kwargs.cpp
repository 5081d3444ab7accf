// transformers' lr_scheduler_kwargs: the keywords of warmup_stable_decay (get_wsd_schedule).
#include <nlohmann/json.hpp>

#include "autotrain/core/error.hpp"
#include "autotrain/optim/schedule.hpp"

namespace autotrain {
namespace {

using nlohmann::json;

constexpr std::string_view kShapes[] = {"linear", "cosine", "1-sqrt"};

long long steps_of(const json& value, std::string_view key, std::string_view source) {
  AT_CHECK(value.is_number_integer() && value.get<long long>() >= 0, source, ": ", key,
           ": expected a count of steps (0 or more), got ", value.dump());
  return value.get<long long>();
}

std::string shape_of(const json& value, std::string_view key, std::string_view source) {
  const bool known = value.is_string() && std::find(std::begin(kShapes), std::end(kShapes),
                                                    value.get<std::string>()) != std::end(kShapes);
  AT_CHECK(known, source, ": ", key, ": expected linear, cosine or 1-sqrt, got ", value.dump());
  return value.get<std::string>();
}

double number_of(const json& value, std::string_view key, std::string_view source, double max) {
  AT_CHECK(value.is_number() && value.get<double>() >= 0.0 && value.get<double>() <= max, source,
           ": ", key, ": expected a number from 0 to ", max, ", got ", value.dump());
  return value.get<double>();
}

}  // namespace

StableDecay parse_scheduler_kwargs(ScheduleKind kind, std::string_view json_text,
                                   std::string_view source) {
  StableDecay wsd;
  json kwargs = json::object();
  if (!json_text.empty()) {
    try {
      kwargs = json::parse(json_text);
    } catch (const json::exception&) {
      throw Error(cat(source, ": expected a JSON object of keywords, got '", json_text, "'"));
    }
    AT_CHECK(kwargs.is_object(), source, ": expected a JSON object of keywords, got ",
             kwargs.dump());
  }
  const bool stable_decay = kind == ScheduleKind::warmup_stable_decay;
  for (const auto& item : kwargs.items()) {
    const std::string& key = item.key();
    const json& value = item.value();
    AT_CHECK(stable_decay, source, ": '", key,
             "': only scheduler warmup_stable_decay takes keywords here (cosine_with_min_lr's "
             "floor is the parameter min_lr_rate)");
    if (key == "num_decay_steps") {
      wsd.decay_steps = steps_of(value, key, source);
    } else if (key == "num_stable_steps") {
      wsd.stable_steps = value.is_null() ? -1 : steps_of(value, key, source);
    } else if (key == "warmup_type") {
      wsd.warmup_type = shape_of(value, key, source);
    } else if (key == "decay_type") {
      wsd.decay_type = shape_of(value, key, source);
    } else if (key == "min_lr_ratio") {
      wsd.min_lr_ratio = number_of(value, key, source, 1.0);
    } else if (key == "num_cycles") {
      wsd.num_cycles = number_of(value, key, source, 1e6);
    } else {
      throw Error(cat(source, ": '", key,
                      "' is not a keyword of warmup_stable_decay (num_decay_steps, "
                      "num_stable_steps, warmup_type, decay_type, min_lr_ratio, num_cycles)"));
    }
  }
  AT_CHECK(!stable_decay || wsd.decay_steps >= 0, source,
           ": scheduler warmup_stable_decay needs num_decay_steps (as transformers' "
           "get_wsd_schedule), e.g. {\"num_decay_steps\": 100}");
  return wsd;
}

}  // namespace autotrain
