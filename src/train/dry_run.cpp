#include "autotrain/train/dry_run.hpp"

#include <utility>

#include "autotrain/core/deadline.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/mpi.hpp"
#include "autotrain/model/param_source.hpp"
#include "autotrain/train/lora.hpp"
#include "autotrain/train/memory_plan.hpp"
#include "autotrain/train/pretrained.hpp"
#include "autotrain/train/resume.hpp"

namespace autotrain::train {
namespace {

std::string check_data(const RunSetup& setup) {
  const auto& params = setup.params();
  const auto [summary, vocab_size] = [&] {
    if (config::is_preference_trainer(params.trainer)) {
      const data::PairsCheck pairs = data::check_pair_inputs(preference_options(setup));
      return std::pair(pairs.summary, pairs.vocab_size);
    }
    const data::InputsCheck inputs = data::check_inputs(prepare_options(setup));
    return std::pair(inputs.summary, inputs.vocab_size);
  }();
  AT_CHECK(vocab_size <= params.vocab_size, "vocab_size: ", params.vocab_size,
           " is smaller than the ", params.tokenizer, " tokenizer's ", vocab_size,
           " tokens; raise vocab_size or leave it at -1");
  return summary;
}

// Where the first weights come from; pretrained weights are matched against the model tensor by
// tensor (headers only). Missing weights are said, not refused: a plan can be checked on a
// login node before the download.
std::string check_weights(const RunSetup& setup) {
  const config::BaseModel& base = setup.resolved.base_model;
  const model::ParamLayout layout(model_config(setup.resolved), setup.topology.world_size);
  std::string from;
  if (base.from_scratch) {
    from = model::RandomInit(static_cast<uint64_t>(setup.params().seed)).describe();
  } else if (base.folder.empty()) {
    from = cat("MISSING: ", base.missing_message());
  } else {
    from = PretrainedWeights(base.folder, layout, static_cast<uint64_t>(setup.params().seed))
               .describe();
  }
  const auto lora = lora_options(setup.params());
  if (!lora) return cat(layout.num_parameters(), " parameters; ", from);
  const LoraModel adapters(layout.config(), *lora, setup.topology.world_size);
  return cat(layout.num_parameters(), " parameters, frozen; ", from, "; LoRA rank ", lora->r,
             " on ", adapters.lora.targets().size(),
             " weights: ", adapters.adapters.num_parameters(), " trainable parameters");
}

}  // namespace

std::string check_run(const RunSetup& setup) {
  std::string data;
  std::string weights;
  std::string failure;
  if (setup.topology.rank == 0) {  // the files are on a file system every rank sees
    try {
      weights = check_weights(setup);
      data = check_data(setup);
    } catch (const Error& error) {
      failure = error.what();
      // Without the model's folder its tokenizer and chat template are missing too: the first
      // problem to fix is the model.
      const config::BaseModel& base = setup.resolved.base_model;
      if (base.weights_missing()) {
        failure = cat(base.missing_message(),
                      " (without its folder the data check fails too: ", failure, ")");
      }
    }
  }
  agree_or_throw(failure.empty(), failure, setup.comm, "the weights and data check of --dry-run");
  const ckpt::CheckpointDir dir(setup.project_dir / "checkpoints");
  const auto resume = plan_resume(setup, dir);
  const std::string resume_line =
      resume ? cat("from ", resume->path.string(), " at step ", resume->saved.step,
                   resume->changes.empty()
                       ? std::string()
                       : cat(", with ", resume->changes.size(), " parameter change(s) allowed"))
             : std::string("none: a fresh start");
  return cat("  weights      ", weights, "\n  data         ", data, "\n  resume       ",
             resume_line, "\n", describe_memory_fit(setup));
}

}  // namespace autotrain::train
