#pragma once
// Checkpoints of a training run (docs/checkpoint-format.md, docs/training.md): what the trainer
// puts into a checkpoint, how it reads one back into a ZeRO engine of any world size and
// stage, and the saver that writes them (synchronously, or from host copies on a background
// thread).
//
// Tensors, in this order for every parameter p of the layout (Hugging Face names):
//   model/<p>                   the fp32 master weights (wte keeps its padded vocabulary rows)
//   optimizer/exp_avg/<p>       AdamW's first moment (SGD: the momentum buffer)
//   optimizer/exp_avg_sq/<p>    AdamW's second moment (absent for SGD)
// Each rank writes its zero::ModelState::shard_runs() and reads back the same part under its
// own partition, completing its held_runs() from the other ranks, so a checkpoint written by
// any (world size, stage) loads into any other.
#include <mpi.h>

#include <exception>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "autotrain/ckpt/checkpoint.hpp"
#include "autotrain/ckpt/checkpoint_dir.hpp"
#include "autotrain/comm/communicator.hpp"
#include "autotrain/config/training_params.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/owned_comm.hpp"
#include "autotrain/data/sampler.hpp"
#include "autotrain/model/lora.hpp"
#include "autotrain/model/param_layout.hpp"
#include "autotrain/optim/optimizer.hpp"
#include "autotrain/train/loss_scaler.hpp"
#include "autotrain/train/resume_point.hpp"
#include "autotrain/zero/engine.hpp"

namespace autotrain::train {

std::vector<ckpt::TensorSpec> checkpoint_tensors(const model::ParamLayout& layout,
                                                 OptimizerKind optimizer);

std::string model_config_json(const model::ModelConfig& config);

// Collective. The pieces point into the engine's memory: valid until its next step().
ckpt::CheckpointContent checkpoint_content(zero::ModelState& engine,
                                           const model::ParamLayout& layout,
                                           const ResumePoint& point,
                                           const config::TrainingParams& params);

// Reads the run state of an open checkpoint (parse_resume_point). Throws Error naming the
// checkpoint and the key when a document is missing or malformed.
ResumePoint read_resume_point(const ckpt::CheckpointReader& reader);

// Empty when a checkpoint with `saved` loads into a model of `config` with `optimizer`;
// otherwise one line per differing field: "n_layer: 2 in the checkpoint, 4 in this run".
std::vector<std::string> compatibility_problems(const ResumePoint& saved,
                                                const model::ModelConfig& config,
                                                OptimizerKind optimizer,
                                                const std::optional<model::LoraOptions>& lora);

// Collective over the engine's ranks (`comm`: host memory, so the MPI communicator where the
// engine's is NCCL). Fills every range the engine holds (held_runs: the parameters, and with
// `optimizer_state` the moments too) while each rank reads from the file only its own part of
// every tensor (src/train/held_state.hpp); the partial checksums of what was read are checked
// with one collective decision (CheckpointReader::verify_reads), and what the stage
// replicates is completed by all-gathers over `comm`, then engine.after_load(). Returns the
// verification problems, the same on every rank: when there are any, the engine holds
// unverified values and must be loaded again or initialised. Does not set the optimizer's
// step count.
std::vector<std::string> load_engine_state(ckpt::CheckpointReader& reader, zero::ModelState& engine,
                                           const model::ParamLayout& layout,
                                           OptimizerKind optimizer, bool optimizer_state,
                                           Communicator& comm);

// How resolve_resume checks the tensors of the checkpoint it picks: by reading them all (a dry
// run, which loads nothing), or at load, where load_engine_state verifies what each rank reads
// and the caller falls back past a checkpoint that fails (calling again with it refused).
enum class TensorCheck { whole_read, at_load };

// resume_from_checkpoint: "none" -> nullopt; "auto" -> the newest valid checkpoint in `dir`
// not in `refused` (skipping, with a warning, each newer one that fails to open or verify),
// nullopt when there is none; anything else is a path that must open and verify, or Error.
// The run state's checksum is always checked; the tensors' as `tensors` says. Collective.
std::optional<std::filesystem::path> resolve_resume(
    const std::string& setting, const ckpt::CheckpointDir& dir, MPI_Comm comm,
    TensorCheck tensors = TensorCheck::whole_read,
    std::span<const std::filesystem::path> refused = {});

// The error for a checkpoint resume_from_checkpoint names that fails verification.
CollectiveError unverified_checkpoint(const std::filesystem::path& path,
                                      const std::vector<std::string>& problems);

// `autotrain export`: the model of checkpoint `checkpoint` as a Hugging Face folder in `dir`
// (export.hpp), in `export_dtype` (fp32|bf16|fp16), in files of at most `max_shard_size`
// ("5GB"). Collective over MPI_COMM_WORLD with any world size: the parameters are loaded into a
// ZeRO-3 engine, so each rank holds only its shard. A fine-tuned model's config.json keeps the
// base model's fields when the folder the checkpoint names is still there. A LoRA checkpoint
// gives its adapter folder; with `merge_adapter`, as a run with merge_adapter exports it: the
// merged model (the base's weights, which must be those the run trained on, plus the scaled
// adapters) in `dir` and the adapter folder in `dir`/adapter. `merge_adapter` on a checkpoint
// without LoRA is a CollectiveError. (src/train/export_checkpoint.cpp)
void export_checkpoint(const std::filesystem::path& checkpoint, const std::filesystem::path& dir,
                       const std::string& export_dtype, const std::string& max_shard_size = "5GB",
                       bool merge_adapter = false);

// Writes checkpoints into one folder with its own duplicate of the communicator (MPI-IO from
// the background thread never shares a communicator with the step loop). Asynchronous: save()
// copies this rank's pieces into host buffers it reuses, starts the write on a background
// thread and returns; a second save() first waits for the previous write, so at most one is
// ever in flight. A checkpoint with streamed pieces (offload nvme) is written in the foreground,
// a part at a time. Collective: every rank constructs, saves and waits in the same order.
class CheckpointSaver {
 public:
  CheckpointSaver(ckpt::CheckpointDir dir, const ckpt::WriteOptions& options,
                  size_t save_total_limit, bool async, MPI_Comm comm);
  ~CheckpointSaver();  // waits for a write in flight (errors are logged, not thrown)
  CheckpointSaver(const CheckpointSaver&) = delete;
  CheckpointSaver& operator=(const CheckpointSaver&) = delete;

  // Returns the seconds the caller was held up: the whole write when synchronous; waiting for
  // the previous write plus the host copy when asynchronous.
  double save(const ckpt::CheckpointContent& content);
  // Asynchronous saves: allocates (and touches) the host copy for a checkpoint like `like` now,
  // so that the first save stalls training no longer than the later ones. No-op otherwise.
  void reserve(const ckpt::CheckpointContent& like);
  // Waits for a write in flight; rethrows its error.
  void wait();
  bool async() const { return async_; }

 private:
  void write(const ckpt::CheckpointContent& content);

  ckpt::CheckpointDir dir_;
  ckpt::WriteOptions options_;
  size_t save_total_limit_;
  bool async_;
  OwnedComm comm_;
  // The host copy the background thread writes from: pieces point into host_.
  std::vector<float> host_;
  ckpt::CheckpointContent snapshot_;
  std::thread thread_;
  std::exception_ptr error_;
  bool said_foreground_ = false;  // the log line on streamed checkpoints
};

}  // namespace autotrain::train
