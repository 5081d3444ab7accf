// `autotrain export`: a checkpoint's model as a Hugging Face folder, on any world size; a LoRA
// checkpoint's adapter folder, or with --merge-adapter the merged model beside it.
#include <nlohmann/json.hpp>
#include <optional>

#include "autotrain/comm/backend.hpp"
#include "autotrain/config/base_model.hpp"
#include "autotrain/core/deadline.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/mpi.hpp"
#include "autotrain/core/strings.hpp"
#include "autotrain/model/param_source.hpp"
#include "autotrain/train/checkpointing.hpp"
#include "autotrain/train/export.hpp"
#include "autotrain/train/lora.hpp"
#include "autotrain/train/pretrained.hpp"

namespace autotrain::train {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The training parameters the checkpoint's run state records that export needs.
struct SavedParams {
  std::string tokenizer;
  std::string model;  // base_model as the run was given it
  int64_t seed = 42;
  double lora_dropout = 0;  // for adapter_config.json (the run state's lora has no dropout)
};

SavedParams saved_params(const ResumePoint& saved, const fs::path& checkpoint) {
  try {
    const json params = json::parse(saved.training_params_json);
    return {params.at("tokenizer").get<std::string>(), params.value("model", std::string()),
            params.value("seed", int64_t{42}), params.value("lora_dropout", 0.0)};
  } catch (const json::exception& error) {
    throw Error(cat("checkpoint ", checkpoint.string(),
                    ": run_state/json/training_params has no tokenizer (", error.what(), ")"));
  }
}

// The base weights a LoRA run trained on (collective): the seed's for a run from scratch, else
// the folder the checkpoint names, which must still hold the very bytes the run read.
std::unique_ptr<model::ParamSource> merge_base_weights(const ResumePoint& saved,
                                                       const SavedParams& params,
                                                       const LoraModel& lora,
                                                       const fs::path& checkpoint) {
  if (saved.base_weights.empty())
    return std::make_unique<model::RandomInit>(static_cast<uint64_t>(params.seed));
  const fs::path base = saved.base_folder;
  std::string failure;
  std::error_code error;
  if (base.empty() || !fs::is_regular_file(base / "config.json", error)) {
    failure = cat("export --merge-adapter: ", checkpoint.string(),
                  ": run_state/json/base_model names the base folder '", base.string(),
                  "', which holds no config.json any more; the merge needs the base weights the "
                  "run trained on (export without --merge-adapter writes the adapter folder)");
  }
  agree_or_throw(failure.empty(), failure, MPI_COMM_WORLD, "the base model's folder");
  const std::string hash = weights_hash(base, MPI_COMM_WORLD);
  if (hash != saved.base_weights) {
    throw CollectiveError(cat("export --merge-adapter: the weights in ", base.string(), " are ",
                              hash, ", but ", checkpoint.string(), " trained its adapters on ",
                              saved.base_weights,
                              " (run_state/json/base_model weights_hash): the base changed"));
  }
  std::unique_ptr<model::ParamSource> weights;
  try {
    weights = std::make_unique<PretrainedWeights>(base, lora.base);
  } catch (const Error& caught) {
    failure = caught.what();
  }
  agree_or_throw(failure.empty(), failure, MPI_COMM_WORLD, "the base model's weights");
  return weights;
}

}  // namespace

void export_checkpoint(const fs::path& checkpoint, const fs::path& dir,
                       const std::string& export_dtype, const std::string& max_shard_size,
                       bool merge_adapter) {
  ckpt::CheckpointReader reader(checkpoint, MPI_COMM_WORLD);
  // The same checks as `ckpt verify`: a damaged checkpoint is never exported as a model.
  if (const std::vector<std::string> problems = reader.verify_checksums(); !problems.empty()) {
    throw CollectiveError(cat("export --checkpoint: ", checkpoint.string(),
                              " fails verification: ", join(problems, "; "),
                              " (export an earlier checkpoint; 'autotrain ckpt verify' lists "
                              "what is damaged)"));
  }
  const ResumePoint saved = read_resume_point(reader);
  if (merge_adapter && !saved.lora) {
    throw CollectiveError(cat("export --merge-adapter: ", checkpoint.string(),
                              " is not a LoRA (peft) checkpoint: it holds the whole model, and "
                              "there are no adapters to merge; export it without --merge-adapter"));
  }
  const SavedParams recorded = saved_params(saved, checkpoint);
  config::TrainingParams params;
  params.export_dtype = export_dtype;
  params.max_shard_size = max_shard_size;
  params.tokenizer = recorded.tokenizer;
  params.merge_adapter = merge_adapter;
  int world_size = 1;
  AT_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &world_size));
  auto comm = make_communicator(CommBackend::mpi, MPI_COMM_WORLD, CommOptions{});
  std::optional<LoraModel> lora;
  if (saved.lora) lora.emplace(saved.model, *saved.lora, world_size);
  const model::ParamLayout layout =
      lora ? lora->adapters : model::ParamLayout(saved.model, world_size);
  zero::EngineOptions options;
  options.stage = 3;  // each rank holds only its shard; export_model gathers a unit at a time
  options.optimizer.kind = saved.optimizer;
  auto engine = zero::Engine::create(layout, *comm, options);
  if (auto problems = load_engine_state(reader, *engine, layout, saved.optimizer, false, *comm);
      !problems.empty()) {
    throw CollectiveError(cat("export --checkpoint: ", checkpoint.string(),
                              " fails verification: ", join(problems, "; ")));
  }
  // The base model's config.json fields, when its folder is still there.
  std::error_code error;
  const fs::path base = saved.base_folder;
  const bool base_present = !base.empty() && fs::is_regular_file(base / "config.json", error);
  if (!lora) {
    export_model(*engine, layout, params, dir, base_present ? base : fs::path());
    return;
  }
  lora->base_model_name = config::peft_base_name(recorded.model, base);
  lora->options.dropout = recorded.lora_dropout;
  if (merge_adapter) lora->weights = merge_base_weights(saved, recorded, *lora, checkpoint);
  export_lora(*engine, *lora, params, dir, base_present ? base : fs::path());
}

}  // namespace autotrain::train
