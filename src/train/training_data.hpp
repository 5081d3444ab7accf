#pragma once
// What the trainer (trainer.cpp's TrainingRun) trains on: the prepared data and its order, each
// micro-batch with its weight and objective, the step's loss and metrics, and the evaluation.
// Language modelling (trainers default and sft: windows of token shards, the mean loss of the
// targets that carry it; language_model_data.cpp) or preference pairs (dpo and orpo: the pair
// losses of train/preference_loss.hpp; preference_data.cpp). Every method that reads or reduces
// across ranks is collective over the run's ranks.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "autotrain/comm/communicator.hpp"
#include "autotrain/data/sampler.hpp"
#include "autotrain/train/replica.hpp"
#include "autotrain/train/run_setup.hpp"
#include "gradient_step.hpp"

namespace autotrain::train {

// A step's or an evaluation's loss over all ranks, and what else it logs (TRL's names).
struct DataLoss {
  double loss = 0;
  std::vector<std::pair<std::string, double>> metrics;
};

class TrainingData {
 public:
  virtual ~TrainingData() = default;

  // The model's rows of one micro-batch: batch_size sequences, or two per pair.
  virtual int rows() const = 0;
  // The training order (data/sampler.hpp): its position is what checkpoints save.
  virtual data::Sampler& sampler() = 0;
  virtual bool has_valid() const = 0;
  // The plan's "data: ..." line.
  virtual std::string describe(long long total_steps) const = 0;
  // Tokens one step trains on, over all ranks (tokens/s).
  virtual double tokens_per_step() const = 0;

  // dpo: the reference model's log-probabilities of every completion, computed once while the
  // replica holds the reference's parameters (the base model, or model_ref), before training.
  virtual bool needs_reference() const { return false; }
  virtual void compute_reference(Replica& /*replica*/) {}

  // The current step's micro-batches, in order: begin_step, then micro_batch(0 .. accumulation
  // - 1) (loaded into the data's buffers; `loss_scale` is fp16's), then end_step with the rank's
  // loss sum (accumulate_gradients') for the step's loss over all ranks.
  virtual void begin_step() = 0;
  virtual MicroBatch micro_batch(long long micro, float loss_scale) = 0;
  virtual DataLoss end_step(double loss_sum, Communicator& scalars) = 0;

  // On the valid split (has_valid()), at most a bounded number of batches from its start.
  virtual DataLoss evaluate(Replica& replica, Communicator& scalars) = 0;
};

// The run's data, prepared (rank 0 tokenizes, into the project folder) and opened on every rank.
std::unique_ptr<TrainingData> open_training_data(const RunSetup& setup);

std::unique_ptr<TrainingData> open_language_model_data(const RunSetup& setup);
std::unique_ptr<TrainingData> open_preference_data(const RunSetup& setup);

// The sampler's options from the run's parameters and ranks.
data::SamplerOptions sampler_options(const RunSetup& setup);

}  // namespace autotrain::train
