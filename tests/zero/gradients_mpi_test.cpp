// The gradient reducers' on_final hook (src/zero/gradients.hpp), which ZeRO-Offload uses to copy
// each unit's reduced gradient to the host during backward: at stages 1-3, with accumulation,
// every unit is reported exactly once a step, on the micro-step flagged last, and what its
// reduced gradient holds then (once the collective given with it is done) is what it holds after
// finish(): the average of every rank's and micro-step's contributions.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "../../src/zero/gradients.hpp"  // internal to the zero layer
#include "autotrain/comm/communicator.hpp"
#include "autotrain/model/param_layout.hpp"

namespace autotrain::zero::gradients_mpi_test {
namespace {

// What rank r writes at micro-step k into flat element i.
float contribution(int rank, int micro, std::size_t i) {
  return static_cast<float>((rank + 1) * 0.5 + micro * 0.25 + static_cast<double>(i % 97) / 64);
}

std::unique_ptr<ReducerOf<HostMemory>> reducer(int stage, const model::ParamLayout& layout,
                                               Communicator& comm, WaitClock& clock) {
  constexpr std::size_t kBucket = 6000;  // several buckets, so drains happen during backward
  if (stage == 1) {
    return std::make_unique<ReplicatedGradients<HostMemory>>(layout, comm, clock, kBucket, true);
  }
  return std::make_unique<PartitionedGradients<HostMemory>>(layout, comm, clock, kBucket);
}

// One micro-step's backward in the documented hook order of a tied model (model/hook_order.hpp):
// the head's unit 0, then L+1, L..1, then unit 0 again.
// Backward adds into what grads() gives; unit 0 gets half of its contribution from each part.
void backward(ReducerOf<HostMemory>& grads, const model::ParamLayout& layout, int rank, int micro) {
  const auto add = [&](int unit, float share) {
    const auto& info = layout.units()[static_cast<std::size_t>(unit)];
    float* g = grads.grads(unit);
    for (std::size_t i = 0; i < info.padded_numel; ++i) {
      g[i] += share * contribution(rank, micro, info.offset + i);
    }
  };
  const int last = layout.num_units() - 1;
  add(0, 0.5f);
  for (int u = last; u >= 1; --u) {
    add(u, 1.0f);
    grads.grads_ready(u);
  }
  add(0, 0.5f);
  grads.grads_ready(0);
}

TEST(GradientReducers, ReportEachUnitOnceWhenItsReducedGradientIsFinal) {
  auto comm = make_communicator(CommBackend::mpi, MPI_COMM_WORLD, CommOptions{});
  const int world = comm->size(), rank = comm->rank();
  const model::ParamLayout layout(model::ModelConfig::gpt2(3, 2, 32, 16, 256), world);
  constexpr int kMicro = 2;
  for (const int stage : {1, 2, 3}) {
    WaitClock clock;
    auto grads = reducer(stage, layout, *comm, clock);
    std::map<int, std::vector<float>> seen;  // unit -> its reduced shard when reported
    int micro = 0;                           // kMicro: in finish()
    grads->on_final([&](int unit, CommHandle* writing) {
      EXPECT_GE(micro, kMicro - 1)
          << "stage " << stage << ": unit " << unit << " reported on a micro-step not flagged last";
      EXPECT_EQ(seen.count(unit), 0u) << "stage " << stage << ": unit " << unit << " twice";
      if (writing != nullptr) writing->wait();
      const model::Range shard = layout.shard(unit, rank);
      const float* values = grads->reduced(unit, shard);
      seen[unit].assign(values, values + shard.size);
    });
    for (int step = 0; step < 2; ++step) {
      seen.clear();
      grads->zero();
      for (micro = 0; micro < kMicro; ++micro) {
        grads->begin_micro_step(micro == kMicro - 1);
        backward(*grads, layout, rank, micro);
      }
      grads->finish();
      ASSERT_EQ(seen.size(), static_cast<std::size_t>(layout.num_units())) << "stage " << stage;
      for (const auto& [unit, values] : seen) {
        const model::Range shard = layout.shard(unit, rank);
        const float* final_values = grads->reduced(unit, shard);
        for (std::size_t i = 0; i < shard.size; ++i) {
          ASSERT_EQ(values[i], final_values[i])
              << "stage " << stage << " unit " << unit << " element " << i;
        }
        // The average over the ranks of both micro-steps' sums (within fp32 rounding).
        double expected = 0;
        for (int r = 0; r < world; ++r)
          for (int k = 0; k < kMicro; ++k) expected += contribution(r, k, shard.offset);
        if (shard.size > 0) {
          EXPECT_NEAR(final_values[0], expected / world, 1e-4 * std::abs(expected))
              << "stage " << stage << " unit " << unit;
        }
      }
    }
  }
}

}  // namespace
}  // namespace autotrain::zero::gradients_mpi_test
