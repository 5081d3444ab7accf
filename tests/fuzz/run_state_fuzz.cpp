// A checkpoint's run state as a resume reads it: the root scalars (a JSON object: step, epoch,
// consumed_samples) NUL the run_state/json documents model_config, data_position, scheduler,
// optimizer, training_params and loss_scaler, each NUL-separated (missing ones are absent).
#include <nlohmann/json.hpp>
#include <string>

#include "autotrain/train/resume_point.hpp"
#include "fuzz_support.hpp"

using namespace autotrain;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const char* const kDocuments[] = {"model_config", "data_position",   "scheduler",
                                           "optimizer",    "training_params", "loss_scaler"};
  const auto parts = fuzz::split_at_nul(fuzz::as_text(data, size), 7);
  ckpt::CheckpointInfo info;
  const auto scalars = nlohmann::json::parse(parts[0], nullptr, /*allow_exceptions=*/false);
  if (scalars.is_object()) {  // the HDF5 attributes are typed: give them numbers
    for (auto* field : {&info.step, &info.epoch, &info.consumed_samples}) *field = 0;
    if (scalars.value("step", nlohmann::json()).is_number_integer())
      info.step = scalars["step"].get<int64_t>();
    if (scalars.value("epoch", nlohmann::json()).is_number_integer())
      info.epoch = scalars["epoch"].get<int64_t>();
    if (scalars.value("consumed_samples", nlohmann::json()).is_number_integer()) {
      info.consumed_samples = scalars["consumed_samples"].get<int64_t>();
    }
  }
  for (size_t i = 1; i < parts.size(); ++i) info.json[kDocuments[i - 1]] = std::string(parts[i]);
  fuzz::expect_error_or_success([&] { (void)train::parse_resume_point(info, "fuzz.h5"); });
  return 0;
}
