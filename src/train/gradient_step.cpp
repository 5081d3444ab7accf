#include "gradient_step.hpp"

#include "autotrain/core/timer.hpp"
#include "autotrain/zero/engine.hpp"

namespace autotrain::train {

AccumulatedGradients accumulate_gradients(Replica& replica, const Communicator& comm,
                                          long long step, long long accumulation, int batch_size,
                                          const std::function<MicroBatch(long long)>& micro_batch,
                                          PassSeconds* seconds) {
  zero::ModelState& engine = replica.state();
  PassSeconds passes;
  AccumulatedGradients gradients;
  std::vector<float> weights;  // the weighed micro-batches' position weights
  engine.begin_step();
  for (long long micro = 0; micro < accumulation; ++micro) {
    const MicroBatch batch = micro_batch(micro);
    engine.begin_micro_step(micro == accumulation - 1);
    const Timer forward_timer;
    replica.set_training_position(step, (micro * comm.size() + comm.rank()) * batch_size);
    replica.forward_async(batch.inputs, batch.targets);
    passes.forward += forward_timer.seconds();
    if (batch.weigh) {  // the weights need the losses: the forward is waited for
      const auto losses = replica.losses();
      weights.resize(losses.size());
      const double loss = batch.weigh(losses, weights);
      const Timer backward_timer;
      replica.backward_weighted(batch.gradient_scale, weights);
      passes.backward += backward_timer.seconds();
      gradients.loss_sum += loss * batch.loss_weight;
      continue;
    }
    const Timer backward_timer;
    replica.backward(batch.gradient_scale);
    passes.backward += backward_timer.seconds();
    // After backward is queued: a GPU stays busy.
    gradients.loss_sum += replica.last_loss() * batch.loss_weight;
  }
  const Timer reduce_timer;
  engine.finish_backward();
  passes.reduce_tail = reduce_timer.seconds();
  const Timer norm_timer;
  gradients.grad_norm = engine.grad_norm();
  passes.grad_norm = norm_timer.seconds();
  if (seconds != nullptr) {
    seconds->forward += passes.forward;
    seconds->backward += passes.backward;
    seconds->reduce_tail += passes.reduce_tail;
    seconds->grad_norm += passes.grad_norm;
  }
  return gradients;
}

}  // namespace autotrain::train
