// The device engine reduces and accumulates a bf16/fp16 model's gradients in fp32
// (src/zero/gradients.hpp, widened gradients): over 8 micro-steps and every rank, contributions
// far below a 16-bit unit in the last place of the running sum still arrive, at every ZeRO
// stage. A fake backward writes known 16-bit gradients through the engine's hooks in the
// documented order; an AdamW step with beta1 = 0 then leaves exactly the reduced gradient in
// exp_avg, which is compared with the exact average. Summing in 16 bits (as the engine did
// before) loses every small contribution: an error of about 1e-2 where this allows 1e-6.
#include <gtest/gtest.h>

#if !defined(AUTOTRAIN_HAVE_CUDA) || !defined(AUTOTRAIN_HAVE_NCCL)

TEST(GpuDeviceEngine, SkippedBecauseTheBuildHasNoCudaAndNccl) {
  GTEST_SKIP() << "this build has no CUDA+NCCL: the device engine is not tested";
}

#else

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "autotrain/comm/communicator.hpp"
#include "autotrain/core/dtype.hpp"
#include "autotrain/core/gpu/check.hpp"
#include "autotrain/core/gpu/device.hpp"
#include "autotrain/model/param_layout.hpp"
#include "autotrain/model/param_source.hpp"
#include "autotrain/zero/gpu/engine.hpp"

namespace autotrain::zero::gpu::gpu_device_engine_mpi_test {
namespace {

constexpr int kMicroSteps = 8;

int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

int world_size() {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

bool every_rank_has_a_gpu() {
  int mine = autotrain::gpu::device_count() >= world_size() ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &mine, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return mine == 1;
}

// A contribution far below half a unit in the last place of 1 in F (bf16: 2^-7 / 2, fp16:
// 2^-10 / 2), exactly representable, times 1, 1.25, 1.5 or 1.75.
template <typename F>
float small_part(std::size_t element) {
  const float small = std::is_same_v<F, __half> ? 0x1p-13f : 0x1p-10f;
  return small * (1.0f + 0.25f * static_cast<float>(element % 4));
}

// What rank `rank` writes for flat element `element` in micro-step `micro`: rank 0's first
// micro-step carries 1 (or -1), everything else a small part.
template <typename F>
float contribution(int micro, int rank, std::size_t element) {
  if (micro == 0 && rank == 0) return element % 3 == 0 ? -1.0f : 1.0f;
  return small_part<F>(element + static_cast<std::size_t>(micro + rank));
}

// The exact average over ranks of the sum over micro-steps, in double.
template <typename F>
double expected_gradient(std::size_t element) {
  double sum = 0;
  for (int r = 0; r < world_size(); ++r)
    for (int m = 0; m < kMicroSteps; ++m) sum += contribution<F>(m, r, element);
  return sum / world_size();
}

template <typename F>
std::uint16_t bits_of(float value) {
  if constexpr (std::is_same_v<F, __half>) {
    return float_to_fp16(value);
  } else {
    return float_to_bf16(value);
  }
}

template <typename F>
class GpuDeviceEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!every_rank_has_a_gpu()) {
      GTEST_SKIP() << "no CUDA device for every rank (" << autotrain::gpu::device_count()
                   << " visible, " << world_size() << " rank(s)): the device engine is not tested";
    }
  }
};

using SixteenBitTypes = ::testing::Types<__nv_bfloat16, __half>;
TYPED_TEST_SUITE(GpuDeviceEngineTest, SixteenBitTypes);

// One micro-step of a GPT-2 backward's hook order: unit 0 opened by the LM head, units L+1 down
// to 1 each written and ready, unit 0 ready last. Each unit's real elements get this rank's
// contributions; padding is left as backward leaves it.
template <typename F>
void fake_backward(DeviceEngine<F>& engine, const model::ParamLayout& layout, int micro,
                   cudaStream_t stream) {
  std::vector<std::vector<std::uint16_t> > host(layout.units().size());
  const auto write = [&](int u) {
    const model::ParamUnit& unit = layout.units()[static_cast<std::size_t>(u)];
    auto& values = host[static_cast<std::size_t>(u)];
    values.resize(unit.numel);
    for (std::size_t i = 0; i < unit.numel; ++i)
      values[i] = bits_of<F>(contribution<F>(micro, world_rank(), unit.offset + i));
    AT_CUDA_CHECK(cudaMemcpyAsync(engine.grads(u), values.data(), unit.numel * sizeof(F),
                                  cudaMemcpyHostToDevice, stream));
  };
  write(0);
  for (int u = layout.num_units() - 1; u >= 1; --u) {
    write(u);
    engine.grads_ready(u);
  }
  engine.grads(0);  // the encoder's turn: nothing more to add
  engine.grads_ready(0);
  AT_CUDA_CHECK(cudaStreamSynchronize(stream));  // the host copies are read by then
}

TYPED_TEST(GpuDeviceEngineTest, SixteenBitGradientsAreReducedAndAccumulatedInFp32) {
  using F = TypeParam;
  const model::ParamLayout layout(model::ModelConfig::gpt2(2, 2, 32, 16, 97), world_size());
  CommOptions comm_options;
  comm_options.device = world_rank();
  auto comm = make_communicator(CommBackend::nccl, MPI_COMM_WORLD, comm_options);
  for (int stage = 0; stage <= 3; ++stage) {
    const autotrain::gpu::Stream stream;
    EngineOptions options;
    options.stage = stage;
    options.reduce_bucket_size = 4000;  // several buckets, so slots alternate
    options.optimizer.beta1 = 0.0f;     // exp_avg = the gradient after one step
    auto engine = DeviceEngine<F>::create(layout, *comm, options, stream.get());
    engine->init_parameters(model::RandomInit(5));  // and the moments to zero
    engine->begin_step();
    for (int micro = 0; micro < kMicroSteps; ++micro) {
      engine->begin_micro_step(micro == kMicroSteps - 1);
      fake_backward(*engine, layout, micro, stream.get());
    }
    engine->finish_backward();
    double expected_squares = 0;
    for (const auto& unit : layout.units())
      for (std::size_t i = 0; i < unit.numel; ++i)
        expected_squares += std::pow(expected_gradient<F>(unit.offset + i), 2);
    const double expected_norm = std::sqrt(expected_squares);
    EXPECT_NEAR(engine->grad_norm(), expected_norm, 1e-6 * expected_norm) << "stage " << stage;
    engine->step(0.0f, 1.0f);
    std::size_t checked = 0;
    for (const StateRun& run : engine->shard_runs()) {
      for (std::size_t i = run.begin; i < run.end; ++i) {
        const double expected = expected_gradient<F>(i);
        ASSERT_NEAR(run.exp_avg[i - run.begin], expected, 1e-6 * std::abs(expected))
            << "stage " << stage << ", flat element " << i;
        ++checked;
      }
    }
    EXPECT_GT(checked, 0u);
  }
}

}  // namespace
}  // namespace autotrain::zero::gpu::gpu_device_engine_mpi_test

#endif  // AUTOTRAIN_HAVE_CUDA && AUTOTRAIN_HAVE_NCCL
