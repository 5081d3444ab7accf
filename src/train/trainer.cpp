#include "autotrain/train/trainer.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "autotrain/comm/backend.hpp"
#include "autotrain/comm/communicator.hpp"
#include "autotrain/config/load.hpp"
#include "autotrain/core/deadline.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/ignore_target.hpp"
#include "autotrain/core/log.hpp"
#include "autotrain/core/memory_usage.hpp"
#include "autotrain/core/paths.hpp"
#include "autotrain/core/strings.hpp"
#include "autotrain/core/timer.hpp"
#include "autotrain/data/prepare.hpp"
#include "autotrain/data/sampler.hpp"
#include "autotrain/data/shard.hpp"
#include "autotrain/kernels/threads.hpp"
#include "autotrain/model/family.hpp"
#include "autotrain/optim/schedule.hpp"
#include "autotrain/train/bench_train.hpp"
#include "autotrain/train/checkpointing.hpp"
#include "autotrain/train/export.hpp"
#include "autotrain/train/lora.hpp"
#include "autotrain/train/loss_scaler.hpp"
#include "autotrain/train/metrics.hpp"
#include "autotrain/train/param_changes.hpp"
#include "autotrain/train/pretrained.hpp"
#include "autotrain/train/project_lock.hpp"
#include "autotrain/train/replica.hpp"
#include "autotrain/train/resume.hpp"
#include "autotrain/train/signals.hpp"
#include "autotrain/train/tensorboard.hpp"
#include "autotrain/zero/engine.hpp"
#include "gradient_step.hpp"
#include "training_data.hpp"

namespace autotrain::train {
namespace {

long long resolve_logging_steps(const config::TrainingParams& params, long long steps_per_epoch) {
  if (params.logging_steps > 0) return params.logging_steps;
  // AutoTrain: 20% of the steps of an epoch, clamped to 1..25.
  return std::clamp<long long>(static_cast<long long>(0.2 * double(steps_per_epoch)), 1, 25);
}

// What one optimizer step measured.
struct StepResult {
  float loss = 0;  // mean over the accumulation and the ranks
  double lr = 0;
  double grad_norm = 0;
  std::vector<std::pair<std::string, double>> metrics;  // the data's (the preference trainers')
};

// One run of the training loop: what run_training sets up (data, sampler, communicators, the
// replica and its engine, the checkpoint saver, metrics), and the named pieces of a step. Every
// method is collective over the run's ranks (setup.comm); only rank 0 (the talker) writes files and
// logs.
class TrainingRun {
 public:
  // `source` gives the first parameters of a run that does not resume.
  TrainingRun(const RunSetup& setup, const model::ParamSource& source, const LoraModel* lora);
  long long start_step() const { return start_step_; }
  long long total_steps() const { return total_steps_; }

  // From the checkpoint plan_resume picks (none: a fresh start), then training_params.json, the
  // saver, the metrics log and the evaluation of the starting point.
  void resume_and_begin();
  // Forward and backward over the accumulation, then the optimizer step (skipped on an fp16
  // overflow); throws a CollectiveError when the loss is not finite.
  StepResult train_step(long long step);
  // Evaluation when due, then the metrics line and the progress bar.
  void evaluate_and_log(long long step, const StepResult& result);
  // A checkpoint when due, at the end, or when any rank received a stop signal; true: stop.
  bool checkpoint_or_stop(long long step);
  // Waits for the last save; exports the model unless the run was preempted.
  TrainSummary finish(long long steps_done);

 private:
  void log_plan() const;
  void initialize_parameters();  // from source_, for a run that does not resume
  // After checkpoints were refused and none is left: zero optimizer state and steps.
  void forget_refused_state();
  // False when the checkpoint's tensors fail verification under resume_from_checkpoint: auto
  // (the engine then holds unverified values: load another or initialise); Error otherwise.
  bool resume_from(const ResumeDecision& resume);
  void evaluate_initial();
  ckpt::CheckpointContent content_at(long long steps_done);
  void save_at(long long steps_done);
  DataLoss evaluate() { return data_->evaluate(*replica_, *scalars_); }
  // dpo: the reference's log-probabilities, from the parameters of the reference (the base
  // model's: a fresh start's first parameters, or model_ref's) before training. True when the
  // engine is left holding the first parameters (source_'s).
  bool compute_reference();

  const RunSetup& setup_;
  const LoraModel* const lora_;  // null unless peft
  const model::ParamSource& source_;
  const std::string base_weights_;  // base_weights_hash of the base model
  const config::TrainingParams& params_;
  const bool talker_;
  const std::filesystem::path project_;
  const std::unique_ptr<TrainingData> data_;
  data::Sampler& sampler_;
  const model::ModelConfig config_;
  const long long accumulation_;
  const long long steps_per_epoch_;
  const long long total_steps_;
  const long long logging_steps_;
  const long long eval_every_;
  std::unique_ptr<Communicator> comm_;
  // NCCL reduces device memory only: the host scalars (losses, stop signals) travel over MPI.
  std::unique_ptr<Communicator> host_comm_;
  Communicator* scalars_;
  const model::ParamLayout layout_;
  const OptimizerKind optimizer_kind_;
  const std::unique_ptr<Replica> replica_;
  zero::ModelState* const engine_;
  LossScaler scaler_;
  const ckpt::CheckpointDir checkpoint_dir_;
  const LrSchedule schedule_;
  const double tokens_per_step_;
  long long start_step_ = 0;
  TrainSummary summary_;
  std::optional<CheckpointSaver> saver_;
  std::optional<MetricsLog> metrics_log_;
  std::optional<TensorBoardLog> tensorboard_;  // log: tensorboard
  Progress progress_;
  Timer run_timer_;
  Timer interval_timer_;
  long long interval_steps_ = 0;
  double comm_wait_ = 0;
};

TrainingRun::TrainingRun(const RunSetup& setup, const model::ParamSource& source,
                         const LoraModel* lora)
    : setup_(setup),
      lora_(lora),
      source_(source),
      base_weights_(base_weights_hash(setup.resolved.base_model, setup.comm)),
      params_(setup.params()),
      talker_(setup.topology.rank == 0),
      project_(setup.project_dir),
      data_(open_training_data(setup)),
      sampler_(data_->sampler()),
      config_(model_config(setup.resolved)),
      accumulation_(params_.gradient_accumulation),
      steps_per_epoch_(static_cast<long long>(sampler_.steps_per_epoch())),
      total_steps_(params_.max_steps > 0 ? params_.max_steps : params_.epochs * steps_per_epoch_),
      logging_steps_(resolve_logging_steps(params_, steps_per_epoch_)),
      eval_every_(params_.eval_strategy == "steps"
                      ? (params_.eval_steps > 0 ? params_.eval_steps : logging_steps_)
                      : steps_per_epoch_),
      comm_(make_communicator(setup.comm_backend, setup.comm, comm_options(setup))),
      host_comm_(setup.comm_backend == CommBackend::nccl
                     ? make_communicator(CommBackend::mpi, setup.comm, comm_options(setup))
                     : nullptr),
      scalars_(host_comm_ ? host_comm_.get() : comm_.get()),
      layout_(trainable_layout(setup, lora)),
      optimizer_kind_(engine_options(setup).optimizer.kind),
      replica_(make_replica(setup, layout_, *comm_, data_->rows(),
                            static_cast<int>(params_.block_size), lora)),
      engine_(&replica_->state()),
      scaler_(setup.device == Device::cuda && setup.precision == Precision::fp16),
      checkpoint_dir_(project_ / "checkpoints"),
      schedule_(lr_schedule(params_, total_steps_)),
      tokens_per_step_(data_->tokens_per_step()),
      progress_(talker_ && setup.model < 0 && Progress::want_bar()) {
  log_plan();
  stop_here_if_asked("model");
}

void TrainingRun::log_plan() const {
  const auto memory = engine_->memory();
  // With peft the trained parameters are the adapters; the base weights are read frozen.
  const std::string weights = params_.peft
                                  ? cat(setup_.resolved.base_model.describe(params_.seed),
                                        " (frozen), LoRA adapters from ", source_.describe())
                                  : source_.describe();
  log::info("model: ", model::family_of(config_).describe(config_), " (",
            setup_.resolved.base_model.name, "), ", weights);
  log::info("model: ", layout_.num_parameters(), " parameters in ", layout_.num_units(),
            " units; ZeRO stage ", engine_->stage(), " holds per rank: params ",
            human_bytes(double(memory.param_bytes)), ", grads ",
            human_bytes(double(memory.grad_bytes)), ", optimizer ",
            human_bytes(double(memory.optimizer_bytes)), ", working ",
            human_bytes(double(memory.working_bytes)), "; activations ",
            human_bytes(double(replica_->activation_bytes())), "; on ", replica_->device(), " in ",
            replica_->precision(),
            replica_->device_memory_bytes() > 0
                ? cat(" (", human_bytes(double(replica_->device_memory_bytes())), " on the GPU)")
                : std::string(),
            zero::describe_offloaded(memory));
  if (lora_) log_lora_plan(*lora_, replica_->frozen_bytes());
  log::info("data: ", data_->describe(total_steps_));
}

void TrainingRun::resume_and_begin() {
  // dpo first: the reference is the base model (or model_ref), whatever a checkpoint holds.
  bool reference_is_current = data_->needs_reference() && compute_reference();
  // Resume: the parameters, the optimizer state and the data position of a checkpoint of any
  // world size and stage (docs/training.md, "Resuming").
  // The tensors are verified as they load (each rank checks what it reads); under `auto` a
  // checkpoint that fails there is refused and the plan is made again without it.
  std::vector<std::filesystem::path> refused;
  std::optional<ResumeDecision> resume =
      plan_resume(setup_, checkpoint_dir_, TensorCheck::at_load, refused, base_weights_);
  if (resume) reference_is_current = false;  // a resume's load replaces the parameters
  while (resume && !resume_from(*resume)) {
    refused.push_back(resume->path);
    resume = plan_resume(setup_, checkpoint_dir_, TensorCheck::at_load, refused, base_weights_);
    if (!talker_) continue;
    if (resume) {
      log::warn("resume: falling back to ", resume->path.string(), ", saved before it");
    } else {
      log::warn("resume: no checkpoint saved before it verifies; the run starts from step 0");
    }
  }
  stop_here_if_asked("begin");
  if (!resume && !refused.empty()) forget_refused_state();
  if (!resume && !reference_is_current) initialize_parameters();
  // After the resume checks: a refused resume leaves the description of the earlier run as it
  // was; an accepted one records its changes in param_changes.jsonl (resume_from).
  if (talker_) {
    const auto& base = setup_.resolved.base_model;
    // null from scratch, as AutoTrain writes None.
    nlohmann::ordered_json record = {{"base_model_path", nullptr}, {"base_model_weights", nullptr}};
    if (!base_weights_.empty()) {
      record["base_model_path"] = base.folder.string();
      record["base_model_weights"] = base_weights_;
    }
    config::write_training_params(params_, project_ / "training_params.json", record);
  }
  saver_.emplace(
      checkpoint_dir_,
      ckpt::WriteOptions{ckpt::parse_layout(params_.checkpoint_layout, "checkpoint_layout")},
      static_cast<size_t>(params_.save_total_limit), params_.async_checkpoint, setup_.comm);
  if (saver_->async()) saver_->reserve(content_at(start_step_));
  if (talker_) {
    metrics_log_.emplace(project_ / "metrics.jsonl");
    metrics_log_->write_run_start(start_step_, total_steps_);
    if (params_.log == "tensorboard") tensorboard_.emplace(project_ / "runs");
  }
  if (data_->has_valid() && start_step_ == 0) evaluate_initial();
  run_timer_.reset();
  interval_timer_.reset();
  if (start_step_ >= total_steps_) {
    log::info("resume: the checkpoint already has all ", total_steps_,
              " steps; nothing left to train");
  }
}

void TrainingRun::initialize_parameters() {
  const std::size_t before = peak_resident_bytes();
  const Timer timer;
  engine_->init_parameters(source_);
  if (base_weights_.empty()) return;
  // What reading the weights cost on top of the model's own memory (at most, over the ranks).
  unsigned long long growth[2] = {peak_resident_bytes() - before, peak_resident_bytes()};
  allreduce_or_abort(growth, 2, MPI_UNSIGNED_LONG_LONG, MPI_MAX, setup_.comm,
                     "the memory the base weights took");
  log::info("model: read the base weights in ", timer.seconds(), " s; peak resident memory per ",
            "rank at most ", human_bytes(double(growth[1])),
            ", of which the reading added at most ", human_bytes(double(growth[0])));
}

void TrainingRun::forget_refused_state() {
  // A refused checkpoint's tensors load before its checksums fail: the optimizer state may hold
  // some of them (the parameters are initialised next). A run that starts from step 0 starts from
  // zero moments, as a fresh one does.
  const std::vector<float> zeros(std::size_t{1} << 20, 0.0f);
  for (const zero::StateRun& run : engine_->held_runs()) {
    for (const int kind : {zero::kExpAvg, zero::kExpAvgSq}) {
      if (!run.holds(kind)) continue;
      for (std::size_t at = 0; at < run.size(); at += zeros.size()) {
        run.write(kind, at, std::span(zeros).first(std::min(zeros.size(), run.size() - at)));
      }
    }
  }
  engine_->after_load();
  engine_->set_optimizer_steps(0);
}

bool TrainingRun::resume_from(const ResumeDecision& resume) {
  const std::string name = resume.path.string();
  const ResumePoint& saved = resume.saved;
  stop_here_if_asked("load");
  // Opened with the expected tensors: each must be present with its length.
  ckpt::CheckpointReader reader(resume.path, setup_.comm,
                                checkpoint_tensors(layout_, optimizer_kind_));
  const std::vector<std::string> problems =
      load_engine_state(reader, *engine_, layout_, optimizer_kind_, true, *scalars_);
  if (!problems.empty()) {
    if (params_.resume_from_checkpoint != "auto")
      throw unverified_checkpoint(resume.path, problems);
    if (talker_) log::warn("skipping checkpoint ", name, ": ", join(problems, "; "));
    return false;
  }
  unsigned long long most_read = reader.bytes_read();
  allreduce_or_abort(&most_read, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, setup_.comm,
                     "the bytes the resume read");
  engine_->set_optimizer_steps(saved.optimizer_steps);
  sampler_.restore(saved.position);
  scaler_.restore(saved.loss_scaler);
  start_step_ = saved.step;
  summary_.resumed_from = resume.path;
  if (talker_) record_param_changes(project_, saved.step, name, resume.changes);
  log::info("resume: ", name, " at step ", saved.step, " (written by ", saved.world_size,
            " rank(s), ZeRO stage ", saved.zero_stage, "); continuing at epoch ",
            saved.position.epoch, ", sample ", saved.position.sample_in_epoch, "; read ",
            human_bytes(double(most_read)), " of tensors per rank at most");
  if (saved.total_steps != total_steps_ && talker_) {
    log::warn("resume: the checkpoint's run planned ", saved.total_steps,
              " steps and this one plans ", total_steps_,
              " (max_steps/epochs changed); the learning-rate schedule follows the new total, "
              "so losses will differ from an uninterrupted run");
  }
  return true;
}

bool TrainingRun::compute_reference() {
  const bool model_ref = !params_.model_ref.empty();
  if (model_ref) {
    engine_->init_parameters(*open_reference_weights(setup_, layout_));
  } else {
    initialize_parameters();
  }
  const Timer timer;
  data_->compute_reference(*replica_);
  const std::string reference = !params_.model_ref.empty() ? "model_ref " + params_.model_ref
                                : params_.peft             ? "the base model without the adapters"
                                                           : "the base model";
  log::info(params_.trainer, ": the reference's log-probabilities of every pair in ",
            timer.seconds(), " s (", reference, "; computed once, no second model is held)");
  return !model_ref;
}

// The starting point, so the curve shows how far training moved the validation loss.
void TrainingRun::evaluate_initial() {
  const DataLoss initial = evaluate();
  log::info("step 0/", total_steps_, "  val_loss ", initial.loss,
            initial.metrics.empty() ? cat(" (ppl ", std::exp(initial.loss), ")") : std::string());
  if (talker_) {
    StepMetrics metrics;
    metrics.total_steps = total_steps_;
    metrics.val_loss = initial.loss;
    metrics.val_metrics = initial.metrics;
    metrics.lr = schedule_.lr(0);
    metrics.loss = std::nan("");
    metrics_log_->write(metrics);
    if (tensorboard_) tensorboard_->write(metrics);
  }
}

StepResult TrainingRun::train_step(long long step) {
  const float loss_scale = scaler_.scale();
  data_->begin_step();
  const AccumulatedGradients gradients = accumulate_gradients(
      *replica_, *comm_, step, accumulation_, static_cast<int>(params_.batch_size),
      [&](long long micro) { return data_->micro_batch(micro, loss_scale); });
  StepResult result;
  const double scaled_norm = gradients.grad_norm;
  result.grad_norm = scaled_norm / double(loss_scale);
  result.lr = schedule_.lr(step);
  if (scaler_.update(scaled_norm)) {
    engine_->step(static_cast<float>(result.lr),
                  clip_factor(result.grad_norm, params_.max_grad_norm) / loss_scale);
  } else if (talker_) {
    log::warn("fp16: the gradients of step ", step + 1, " overflowed at loss scale ", loss_scale,
              "; step skipped (", scaler_.skipped_steps(), " so far), loss scale now ",
              scaler_.scale());
  }
  sampler_.advance();
  comm_wait_ += engine_->take_comm_wait_seconds();

  DataLoss loss = data_->end_step(gradients.loss_sum, *scalars_);
  result.loss = static_cast<float>(loss.loss);
  result.metrics = std::move(loss.metrics);
  // The loss is the same on every rank (averaged above): one message, not one per rank.
  if (!std::isfinite(result.loss)) {
    throw CollectiveError(cat("training diverged: the loss of step ", step + 1, " is ", result.loss,
                              " (lower lr, or check the data)"));
  }
  ++interval_steps_;
  summary_.final_loss = result.loss;
  return result;
}

void TrainingRun::evaluate_and_log(long long step, const StepResult& result) {
  StepMetrics metrics;
  metrics.step = step + 1;
  metrics.total_steps = total_steps_;
  metrics.epoch = double(step + 1) / double(steps_per_epoch_);
  metrics.loss = result.loss;
  metrics.lr = result.lr;
  metrics.grad_norm = result.grad_norm;
  metrics.metrics = result.metrics;
  metrics.elapsed_s = run_timer_.seconds();
  const bool last = step + 1 == total_steps_;
  if (data_->has_valid() && ((step + 1) % eval_every_ == 0 || last)) {
    DataLoss valid = evaluate();
    metrics.val_loss = valid.loss;
    metrics.val_metrics = std::move(valid.metrics);
    summary_.final_val_loss = metrics.val_loss;
  }
  const double seconds = std::max(interval_timer_.seconds(), 1e-9);
  metrics.tokens_per_s = double(interval_steps_) * tokens_per_step_ / seconds;
  if ((step + 1) % logging_steps_ == 0 || last || step == 0 || metrics.val_loss) {
    metrics.comm_wait_fraction = comm_wait_ / seconds;
    interval_timer_.reset();
    interval_steps_ = 0;
    comm_wait_ = 0;
    if (talker_) {
      metrics_log_->write(metrics);
      if (tensorboard_) tensorboard_->write(metrics);
      progress_.log_line(metrics);
    }
  } else if (talker_) {
    progress_.update(metrics);
  }
}

bool TrainingRun::checkpoint_or_stop(long long step) {
  // Step boundary: the ranks agree on a stop signal (one that reached any rank stops all).
  float stop = static_cast<float>(StopSignals::received());
  scalars_->allreduce(std::span<float>(&stop, 1), ReduceOp::max);
  const bool last = step + 1 == total_steps_;
  const bool preempt = stop != 0 && !last;
  if (preempt || last ||
      (params_.checkpoint_every > 0 && (step + 1) % params_.checkpoint_every == 0)) {
    save_at(step + 1);
  }
  if (preempt) {
    summary_.preempted = true;
    summary_.stop_signal = static_cast<int>(stop);
  }
  return preempt;
}

ckpt::CheckpointContent TrainingRun::content_at(long long steps_done) {
  ResumePoint point;
  point.step = steps_done;
  point.position = sampler_.position();
  point.global_batch_size = static_cast<long long>(sampler_.global_batch_size());
  point.total_steps = total_steps_;
  point.optimizer_steps = engine_->optimizer_steps();
  point.world_size = setup_.topology.world_size;
  point.zero_stage = engine_->stage();
  point.model = config_;
  point.optimizer = optimizer_kind_;
  point.loss_scaler = scaler_.state();
  point.base_weights = base_weights_;
  if (lora_) point.lora = lora_->options;
  if (!base_weights_.empty()) point.base_folder = setup_.resolved.base_model.folder.string();
  return checkpoint_content(*engine_, layout_, point, params_);
}

void TrainingRun::save_at(long long steps_done) {
  const double stalled = saver_->save(content_at(steps_done));
  log::info("checkpoint: step ", steps_done, ": training stalled ", stalled, " s",
            saver_->async() ? " (host copy; the write continues in the background)" : "");
}

TrainSummary TrainingRun::finish(long long steps_done) {
  saver_->wait();
  progress_.finish();
  summary_.steps = steps_done;
  summary_.steps_this_run = steps_done - start_step_;
  summary_.wall_s = run_timer_.seconds();
  summary_.tokens = tokens_per_step_ * double(summary_.steps_this_run);
  summary_.tokens_per_s = summary_.tokens / std::max(summary_.wall_s, 1e-9);
  if (talker_) {  // after wait(): a preempted run's checkpoint of `steps_done` is committed
    metrics_log_->write_run_stop(steps_done, total_steps_, summary_.wall_s,
                                 summary_.preempted ? signal_name(summary_.stop_signal) : "");
  }
  if (summary_.preempted) {
    if (talker_)
      log::warn("stopped by ", signal_name(summary_.stop_signal), " after step ", steps_done,
                ": checkpoint saved in ", checkpoint_dir_.folder().string(), "; exiting with ",
                kExitPreempted, " (requeue; resume_from_checkpoint: auto continues)");
    return summary_;
  }
  summary_.export_dir = project_;
  if (lora_) {
    export_lora(*engine_, *lora_, params_, project_, setup_.resolved.base_model.folder);
  } else {
    export_model(*engine_, layout_, params_, project_, setup_.resolved.base_model.folder);
  }
  return summary_;
}

}  // namespace

TrainSummary run_training(const RunSetup& setup) {
  const ProjectLock lock(setup.project_dir, setup.comm);
  stop_here_if_asked("lock");
  kernels::set_num_threads(setup.threads);
  const auto lora = open_lora_model(setup);
  const model::ParamLayout layout = trainable_layout(setup, lora.get());
  const auto source = open_param_source(setup, layout);
  TrainingRun run(setup, *source, lora.get());
  run.resume_and_begin();
  long long step = run.start_step();
  while (step < run.total_steps()) {
    if (step == run.start_step() + 2) stop_here_if_asked("step");
    const StepResult result = run.train_step(step);
    run.evaluate_and_log(step, result);
    const bool stop = run.checkpoint_or_stop(step);
    ++step;
    if (stop) break;
  }
  return run.finish(step);
}

}  // namespace autotrain::train
