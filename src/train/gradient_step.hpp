#pragma once
// The forward and backward passes of one optimizer step, the one loop that the trainer
// (trainer.cpp, `TrainingRun::train_step`) and `bench train` (bench_train.cpp) both run. What
// each micro-batch holds and weighs is the caller's (the sampler's rows and their loss-carrying
// share; seeded random tokens), and so is the update that follows (the fp16 loss scaler,
// clipping, the learning rate).
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "autotrain/comm/communicator.hpp"
#include "autotrain/train/replica.hpp"

namespace autotrain::train {

// One micro-batch: where its B·T inputs and targets are, and how it weighs.
struct MicroBatch {
  const std::int32_t* inputs = nullptr;
  const std::int32_t* targets = nullptr;
  float gradient_scale = 1;  // backward's: the loss scale times the micro-batch's weight
  double loss_weight = 1;    // its loss's weight in the step's loss sum
  // Where set, the objective is the caller's function of the forward's per-position losses
  // (the preference losses): given them, it fills the backward's weight of each position
  // (Replica::backward_weighted, before gradient_scale) and returns the micro-batch's loss, which
  // then counts instead of the mean token loss.
  std::function<double(std::span<const float> losses, std::span<float> weights)> weigh = nullptr;
};

// Host time per pass, summed over the micro-batches (on a GPU, the time to queue the work; the
// wait for it lands in reduce_tail).
struct PassSeconds {
  double forward = 0;
  double backward = 0;
  double reduce_tail = 0;  // finish_backward: waiting for the last reductions
  double grad_norm = 0;    // the global gradient norm (its allgather included)
};

struct AccumulatedGradients {
  double loss_sum = 0;   // Σ loss_weight · loss over the micro-batches, on this rank
  double grad_norm = 0;  // of the gradients as accumulated (scaled by the loss scale)
};

// Collective over the engine's communicator `comm`. For each of the `accumulation`
// micro-batches (`micro_batch(micro)` loads micro-batch `micro` and says how it weighs): forward
// and backward through the engine's unit hooks, each batch placed in the step's data order for
// LoRA's dropout masks, its loss read after backward is queued (so a GPU stays busy); then the
// wait for the last reductions and the global gradient norm. The engine is then ready for step().
// With `seconds`, adds each pass's time to it.
AccumulatedGradients accumulate_gradients(Replica& replica, const Communicator& comm,
                                          long long step, long long accumulation, int batch_size,
                                          const std::function<MicroBatch(long long)>& micro_batch,
                                          PassSeconds* seconds = nullptr);

}  // namespace autotrain::train
