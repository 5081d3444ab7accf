#include "autotrain/train/trainer.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "autotrain/comm/backend.hpp"
#include "autotrain/comm/communicator.hpp"
#include "autotrain/config/load.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/log.hpp"
#include "autotrain/core/paths.hpp"
#include "autotrain/core/strings.hpp"
#include "autotrain/core/timer.hpp"
#include "autotrain/data/prepare.hpp"
#include "autotrain/data/sampler.hpp"
#include "autotrain/data/shard.hpp"
#include "autotrain/kernels/threads.hpp"
#include "autotrain/model/gpt2.hpp"
#include "autotrain/optim/schedule.hpp"
#include "autotrain/train/checkpointing.hpp"
#include "autotrain/train/export.hpp"
#include "autotrain/train/loss_scaler.hpp"
#include "autotrain/train/metrics.hpp"
#include "autotrain/train/param_changes.hpp"
#include "autotrain/train/project_lock.hpp"
#include "autotrain/train/replica.hpp"
#include "autotrain/train/resume.hpp"
#include "autotrain/train/signals.hpp"
#include "autotrain/zero/engine.hpp"

namespace autotrain::train {
namespace {

// Evaluation reads at most this many batches of W x B windows, from the start of the valid
// split, so an evaluation costs a bounded, predictable time on large validation sets.
constexpr long long kMaxEvalBatches = 64;

struct Datasets {
  data::TokenDataset train;
  std::optional<data::TokenDataset> valid;
};

Datasets prepare_data(const RunSetup& setup) {
  const auto& params = setup.params();
  const data::PrepareOptions options = prepare_options(setup);
  const auto prepared = data::prepare_if_needed_collective(options, MPI_COMM_WORLD);
  if (data::is_prepared_folder(options.data_path)) {
    log::info("data: the prepared shards in ", options.data_path.string());
  } else if (prepared.reused) {
    log::info("data: reusing the prepared shards in ", options.output_dir.string());
  }
  AT_CHECK(prepared.vocab_size <= params.vocab_size, "vocab_size: ", params.vocab_size,
           " is smaller than the ", params.tokenizer, " tokenizer's ", prepared.vocab_size,
           " tokens; raise vocab_size or leave it at -1");
  const auto* train_split = prepared.find(params.train_split);
  AT_CHECK(train_split != nullptr, "data: no '", params.train_split, "' split was prepared from ",
           options.data_path.string());
  Datasets datasets{data::TokenDataset(train_split->shards), std::nullopt};
  datasets.train.check_ids_below(params.vocab_size);
  if (!params.valid_split.empty() && params.eval_strategy != "no") {
    const auto* valid_split = prepared.find(params.valid_split);
    AT_CHECK(valid_split != nullptr, "valid_split: no '", params.valid_split,
             "' split was found or carved from ", options.data_path.string(), " (add a ",
             params.valid_split, ".csv/.jsonl/.txt file, or set valid_split to empty)");
    datasets.valid.emplace(valid_split->shards);
    datasets.valid->check_ids_below(params.vocab_size);
  }
  return datasets;
}

long long resolve_logging_steps(const config::TrainingParams& params, long long steps_per_epoch) {
  if (params.logging_steps > 0) return params.logging_steps;
  // AutoTrain: 20% of the steps of an epoch, clamped to 1..25.
  return std::clamp<long long>(static_cast<long long>(0.2 * double(steps_per_epoch)), 1, 25);
}

// Mean loss over the first windows of the valid split, every rank taking its rows of each
// batch. All ranks run the same number of forwards (ZeRO-3 gathers are collective).
double evaluate(Replica& replica, long long B, long long T, Communicator& comm,
                const data::TokenDataset& valid, std::vector<int32_t>& inputs,
                std::vector<int32_t>& targets) {
  const long long W = comm.size();
  const long long windows = (static_cast<long long>(valid.num_tokens()) - 1) / T;
  AT_CHECK(windows >= 1, "valid split: ", valid.num_tokens(),
           " tokens are fewer than one window of ", T + 1,
           " tokens; provide more validation data or set eval_strategy no");
  const long long batches = std::min(kMaxEvalBatches, (windows + W * B - 1) / (W * B));
  double loss_sum = 0;
  double count = 0;
  for (long long batch = 0; batch < batches; ++batch) {
    long long valid_rows = 0;
    for (long long b = 0; b < B; ++b) {
      const long long window = batch * W * B + comm.rank() * B + b;
      const bool real = window < windows;
      valid_rows += real ? 1 : 0;
      data::load_window(
          valid, static_cast<uint64_t>(T), static_cast<uint64_t>(real ? window : 0),
          std::span<int32_t>(inputs).subspan(static_cast<size_t>(b * T), static_cast<size_t>(T)),
          std::span<int32_t>(targets).subspan(static_cast<size_t>(b * T), static_cast<size_t>(T)));
    }
    replica.forward(inputs.data(), targets.data());
    const auto losses = replica.losses();
    for (long long i = 0; i < valid_rows * T; ++i) loss_sum += losses[static_cast<size_t>(i)];
    count += double(valid_rows * T);
  }
  float totals[2] = {static_cast<float>(loss_sum), static_cast<float>(count)};
  comm.allreduce(std::span<float>(totals, 2), ReduceOp::sum);
  return double(totals[0]) / double(totals[1]);
}

}  // namespace

TrainSummary run_training(const RunSetup& setup) {
  const auto& params = setup.params();
  const auto& topology = setup.topology;
  const bool talker = topology.rank == 0;
  const std::filesystem::path project = params.project_name;
  const ProjectLock lock(project, MPI_COMM_WORLD);
  kernels::set_num_threads(setup.threads);

  Datasets datasets = prepare_data(setup);
  const auto config = model_config(params);
  const int B = static_cast<int>(params.batch_size);
  const int T = static_cast<int>(params.block_size);
  const long long accumulation = params.gradient_accumulation;

  data::SamplerOptions sampler_options;
  sampler_options.block_size = static_cast<uint64_t>(T);
  sampler_options.batch_size = static_cast<uint64_t>(B);
  sampler_options.gradient_accumulation = static_cast<uint64_t>(accumulation);
  sampler_options.world_size = static_cast<uint64_t>(topology.world_size);
  sampler_options.rank = static_cast<uint64_t>(topology.rank);
  sampler_options.seed = static_cast<uint64_t>(params.seed);
  data::Sampler sampler(datasets.train.num_tokens(), sampler_options);
  const long long steps_per_epoch = static_cast<long long>(sampler.steps_per_epoch());
  const long long total_steps =
      params.max_steps > 0 ? params.max_steps : params.epochs * steps_per_epoch;
  const long long logging_steps = resolve_logging_steps(params, steps_per_epoch);
  const long long eval_every = params.eval_strategy == "steps"
                                   ? (params.eval_steps > 0 ? params.eval_steps : logging_steps)
                                   : steps_per_epoch;

  auto comm = make_communicator(setup.comm_backend, MPI_COMM_WORLD, comm_options(setup));
  // NCCL reduces device memory only: the host scalars (losses, stop signals) travel over MPI.
  std::unique_ptr<Communicator> host_comm;
  if (setup.comm_backend == CommBackend::nccl) {
    host_comm = make_communicator(CommBackend::mpi, MPI_COMM_WORLD, comm_options(setup));
  }
  Communicator& scalars = host_comm ? *host_comm : *comm;

  const model::ParamLayout layout(config, topology.world_size);
  const zero::EngineOptions engine_options = train::engine_options(setup);
  const auto replica = make_replica(setup, layout, *comm, B, T, static_cast<uint64_t>(params.seed));
  zero::ModelState* const engine = &replica->state();
  LossScaler scaler(setup.device == Device::cuda && setup.precision == Precision::fp16);

  const auto memory = engine->memory();
  log::info("model: ", layout.num_parameters(), " parameters in ", layout.num_units(),
            " units; ZeRO stage ", engine->stage(), " holds per rank: params ",
            human_bytes(double(memory.param_bytes)), ", grads ",
            human_bytes(double(memory.grad_bytes)), ", optimizer ",
            human_bytes(double(memory.optimizer_bytes)), ", working ",
            human_bytes(double(memory.working_bytes)), "; activations ",
            human_bytes(double(replica->activation_bytes())), "; on ", replica->device(), " in ",
            replica->precision(),
            replica->device_memory_bytes() > 0
                ? cat(" (", human_bytes(double(replica->device_memory_bytes())), " on the GPU)")
                : std::string());
  log::info("data: ", datasets.train.num_tokens(), " training tokens, ", sampler.num_windows(),
            " windows of ", T, " tokens, ", steps_per_epoch, " steps per epoch of ",
            sampler.global_batch_size(), " sequences; training for ", total_steps, " steps");

  // Resume: the parameters, the optimizer state and the data position of a checkpoint of any
  // world size and stage (docs/training.md, "Resuming").
  const OptimizerKind optimizer_kind = engine_options.optimizer.kind;
  const long long global_batch = static_cast<long long>(sampler.global_batch_size());
  const ckpt::CheckpointDir checkpoint_dir(project / "checkpoints");
  long long start_step = 0;
  TrainSummary summary;
  if (const auto resume = plan_resume(setup, checkpoint_dir)) {
    const std::string name = resume->path.string();
    const ResumePoint& saved = resume->saved;
    // Opened with the expected tensors: each must be present with its length.
    ckpt::CheckpointReader reader(resume->path, MPI_COMM_WORLD,
                                  checkpoint_tensors(layout, optimizer_kind));
    load_engine_state(reader, *engine, layout, optimizer_kind, true);
    engine->set_optimizer_steps(saved.optimizer_steps);
    sampler.restore(saved.position);
    scaler.restore(saved.loss_scaler);
    start_step = saved.step;
    summary.resumed_from = resume->path;
    if (talker) record_param_changes(project, saved.step, name, resume->changes);
    log::info("resume: ", name, " at step ", saved.step, " (written by ", saved.world_size,
              " rank(s), ZeRO stage ", saved.zero_stage, "); continuing at epoch ",
              saved.position.epoch, ", sample ", saved.position.sample_in_epoch);
    if (saved.total_steps != total_steps && talker) {
      log::warn(
          "resume: the checkpoint's run planned ", saved.total_steps, " steps and this one plans ",
          total_steps,
          " (max_steps/epochs changed); the learning-rate schedule follows the new total, so ",
          "losses will differ from an uninterrupted run");
    }
  }
  // After the resume checks: a refused resume leaves the description of the earlier run as it
  // was; an accepted one records its changes in param_changes.jsonl (above).
  if (talker) config::write_training_params(params, project / "training_params.json");
  CheckpointSaver saver(
      checkpoint_dir,
      ckpt::WriteOptions{ckpt::parse_layout(params.checkpoint_layout, "checkpoint_layout")},
      static_cast<size_t>(params.save_total_limit), params.async_checkpoint, MPI_COMM_WORLD);
  const auto content_at = [&](long long steps_done) {
    ResumePoint point;
    point.step = steps_done;
    point.position = sampler.position();
    point.global_batch_size = global_batch;
    point.total_steps = total_steps;
    point.optimizer_steps = engine->optimizer_steps();
    point.world_size = topology.world_size;
    point.zero_stage = engine->stage();
    point.model = config;
    point.optimizer = optimizer_kind;
    point.loss_scaler = scaler.state();
    return checkpoint_content(*engine, layout, point, params);
  };
  if (saver.async()) saver.reserve(content_at(start_step));
  const auto save_at = [&](long long steps_done) {
    const double stalled = saver.save(content_at(steps_done));
    log::info("checkpoint: step ", steps_done, ": training stalled ", stalled, " s",
              saver.async() ? " (host copy; the write continues in the background)" : "");
  };
  const LrSchedule schedule(parse_schedule(params.scheduler, "scheduler"), params.lr, total_steps,
                            params.warmup_ratio);
  std::vector<int32_t> inputs(static_cast<size_t>(B) * static_cast<size_t>(T));
  std::vector<int32_t> targets(inputs.size());
  const double tokens_per_step = double(sampler.global_batch_size()) * double(T);

  std::optional<MetricsLog> metrics_log;
  if (talker) {
    metrics_log.emplace(project / "metrics.jsonl");
    metrics_log->write_run_start(start_step, total_steps);
  }
  Progress progress(talker && Progress::want_bar());

  if (datasets.valid && start_step == 0) {
    // The starting point, so the curve shows how far training moved the validation loss.
    const double initial = evaluate(*replica, B, T, scalars, *datasets.valid, inputs, targets);
    log::info("step 0/", total_steps, "  val_loss ", initial, " (ppl ", std::exp(initial), ")");
    if (talker) {
      StepMetrics metrics;
      metrics.total_steps = total_steps;
      metrics.val_loss = initial;
      metrics.lr = schedule.lr(0);
      metrics.loss = std::nan("");
      metrics_log->write(metrics);
    }
  }
  const Timer run_timer;
  Timer interval_timer;
  long long interval_steps = 0;
  double comm_wait = 0;
  if (start_step >= total_steps) {
    log::info("resume: the checkpoint already has all ", total_steps,
              " steps; nothing left to train");
  }
  long long step = start_step;
  for (; step < total_steps; ++step) {
    engine->begin_step();
    double loss_sum = 0;
    const float loss_scale = scaler.scale();
    for (long long micro = 0; micro < accumulation; ++micro) {
      sampler.load_micro_batch(datasets.train, static_cast<uint64_t>(micro), inputs, targets);
      engine->begin_micro_step(micro == accumulation - 1);
      replica->forward_async(inputs.data(), targets.data());
      replica->backward(loss_scale / static_cast<float>(accumulation));
      loss_sum += replica->last_loss();  // after backward is queued: a GPU stays busy
    }
    engine->finish_backward();
    const double scaled_norm = engine->grad_norm();
    const double grad_norm = scaled_norm / double(loss_scale);
    const double lr = schedule.lr(step);
    if (scaler.update(scaled_norm)) {
      engine->step(static_cast<float>(lr),
                   clip_factor(grad_norm, params.max_grad_norm) / loss_scale);
    } else if (talker) {
      log::warn("fp16: the gradients of step ", step + 1, " overflowed at loss scale ", loss_scale,
                "; step skipped (", scaler.skipped_steps(), " so far), loss scale now ",
                scaler.scale());
    }
    sampler.advance();
    comm_wait += engine->take_comm_wait_seconds();

    float step_loss = static_cast<float>(loss_sum / double(accumulation));
    scalars.allreduce(std::span<float>(&step_loss, 1), ReduceOp::avg);
    // The loss is the same on every rank (averaged above): one message, not one per rank.
    if (!std::isfinite(step_loss)) {
      throw CollectiveError(cat("training diverged: the loss of step ", step + 1, " is ", step_loss,
                                " (lower lr, or check the data)"));
    }
    ++interval_steps;

    StepMetrics metrics;
    metrics.step = step + 1;
    metrics.total_steps = total_steps;
    metrics.epoch = double(step + 1) / double(steps_per_epoch);
    metrics.loss = step_loss;
    metrics.lr = lr;
    metrics.grad_norm = grad_norm;
    metrics.elapsed_s = run_timer.seconds();
    const bool last = step + 1 == total_steps;
    if (datasets.valid && ((step + 1) % eval_every == 0 || last)) {
      metrics.val_loss = evaluate(*replica, B, T, scalars, *datasets.valid, inputs, targets);
      summary.final_val_loss = metrics.val_loss;
    }
    const bool log_now = (step + 1) % logging_steps == 0 || last || step == 0 || metrics.val_loss;
    if (log_now) {
      const double seconds = interval_timer.seconds();
      metrics.tokens_per_s = double(interval_steps) * tokens_per_step / std::max(seconds, 1e-9);
      metrics.comm_wait_fraction = comm_wait / std::max(seconds, 1e-9);
      interval_timer.reset();
      interval_steps = 0;
      comm_wait = 0;
      if (talker) {
        metrics_log->write(metrics);
        progress.log_line(metrics);
      }
    } else if (talker) {
      metrics.tokens_per_s =
          double(interval_steps) * tokens_per_step / std::max(interval_timer.seconds(), 1e-9);
      progress.update(metrics);
    }
    summary.final_loss = step_loss;

    // Step boundary: the ranks agree on a stop signal (one that reached any rank stops all).
    float stop = static_cast<float>(StopSignals::received());
    scalars.allreduce(std::span<float>(&stop, 1), ReduceOp::max);
    const bool preempt = stop != 0 && !last;
    if (preempt || last ||
        (params.checkpoint_every > 0 && (step + 1) % params.checkpoint_every == 0)) {
      save_at(step + 1);
    }
    if (preempt) {
      summary.preempted = true;
      summary.stop_signal = static_cast<int>(stop);
      ++step;
      break;
    }
  }
  saver.wait();
  progress.finish();
  summary.steps = step;
  summary.steps_this_run = step - start_step;
  summary.wall_s = run_timer.seconds();
  summary.tokens = tokens_per_step * double(summary.steps_this_run);
  summary.tokens_per_s = summary.tokens / std::max(summary.wall_s, 1e-9);
  if (talker) {  // after saver.wait(): a preempted run's checkpoint of `step` is committed
    metrics_log->write_run_stop(step, total_steps, summary.wall_s,
                                summary.preempted ? signal_name(summary.stop_signal) : "");
  }

  if (summary.preempted) {
    if (talker)
      log::warn("stopped by ", signal_name(summary.stop_signal), " after step ", step,
                ": checkpoint saved in ", checkpoint_dir.folder().string(), "; exiting with ",
                kExitPreempted, " (requeue; resume_from_checkpoint: auto continues)");
    return summary;
  }
  summary.export_dir = project;
  export_model(*engine, layout, params, project);
  return summary;
}

}  // namespace autotrain::train
