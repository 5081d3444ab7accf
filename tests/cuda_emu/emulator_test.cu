// The CUDA emulator's own checks (built only with AUTOTRAIN_CUDA=emulate): the misuse it
// promises to catch is caught, and lazy streams really hide results nobody synchronized for.
// Each kernel here is written the way a bug would be.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

__global__ void fill_kernel(float* out, float value, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) out[i] = value;
}

__global__ void copy_kernel(float* out, const float* in, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) out[i] = in[i];
}

// Lanes past n return, then the others shuffle with a full mask: undefined on a GPU.
__global__ void shuffle_after_exit_kernel(float* out, int n) {
  const int i = static_cast<int>(threadIdx.x);
  if (i >= n) return;
  out[i] = __shfl_xor_sync(0xffffffffu, static_cast<float>(i), 1);
}

// Half the block skips a __syncthreads the other half waits at.
__global__ void divergent_barrier_kernel(float* out) {
  if (threadIdx.x < 16) {
    __syncthreads();
    out[threadIdx.x] = 1.0f;
  } else {
    __shfl_xor_sync(0xffffffffu, 1.0f, 1);
  }
}

// One mma.sync m16n8k16 (fp16 in, fp32 out) with fragments built from row-major A [16, 16] and
// B [16, 8] (k x n) as the PTX ISA's tables place them, D = A·B + 1 stored back row-major.
// g = lane / 4, t = lane % 4: a = {A[g][2t..], A[g+8][2t..], A[g][2t+8..], A[g+8][2t+8..]},
// b = {B[2t..][g], B[2t+8..][g]}, d = {D[g][2t], D[g][2t+1], D[g+8][2t], D[g+8][2t+1]}.
__global__ void mma_kernel(float* d, const __half* a, const __half* b) {
  const int g = static_cast<int>(threadIdx.x) / 4;
  const int t = static_cast<int>(threadIdx.x) % 4;
  const auto pair = [](__half lo, __half hi) {
    std::uint16_t bits[2];
    std::memcpy(&bits[0], static_cast<const void*>(&lo), 2);
    std::memcpy(&bits[1], static_cast<const void*>(&hi), 2);
    return static_cast<std::uint32_t>(bits[0]) | static_cast<std::uint32_t>(bits[1]) << 16;
  };
  const auto a_at = [&](int row, int col) {
    return pair(a[row * 16 + col], a[row * 16 + col + 1]);
  };
  const auto b_at = [&](int k, int n) { return pair(b[k * 8 + n], b[(k + 1) * 8 + n]); };
  const std::uint32_t ra[4] = {a_at(g, 2 * t), a_at(g + 8, 2 * t), a_at(g, 2 * t + 8),
                               a_at(g + 8, 2 * t + 8)};
  const std::uint32_t rb[2] = {b_at(2 * t, g), b_at(2 * t + 8, g)};
  float acc[4] = {1.0f, 1.0f, 1.0f, 1.0f};
  cuda_emu::mma_m16n8k16<__half>(acc, ra, rb);
  d[g * 8 + 2 * t] = acc[0];
  d[g * 8 + 2 * t + 1] = acc[1];
  d[(g + 8) * 8 + 2 * t] = acc[2];
  d[(g + 8) * 8 + 2 * t + 1] = acc[3];
}

// mma.sync needs the whole warp; a block of 16 threads has half of one.
__global__ void half_warp_mma_kernel() {
  const std::uint32_t ra[4] = {};
  const std::uint32_t rb[2] = {};
  float acc[4] = {};
  cuda_emu::mma_m16n8k16<__half>(acc, ra, rb);
}

// A 16-byte load from a pointer 4 bytes past a 16-byte boundary, checked the way the kernels'
// 128-bit access helper (src/kernels/gpu/common.cuh) checks each access.
__global__ void misaligned_vector_load_kernel(float* out, const float* in) {
  const float* p = in + 1;
  cuda_emu::check_vector_access(p, sizeof(float4));
  const float4 x = *reinterpret_cast<const float4*>(p);
  out[0] = x.x;
}

// The same load 16-byte aligned: allowed.
__global__ void aligned_vector_load_kernel(float* out, const float* in) {
  const float* p = in + 4;
  cuda_emu::check_vector_access(p, sizeof(float4));
  const float4 x = *reinterpret_cast<const float4*>(p);
  out[0] = x.x + x.y + x.z + x.w;
}

// Warp 1 reads what warp 0 wrote to shared memory, with the __syncthreads between them missing.
__global__ void missing_barrier_kernel(float* out) {
  __shared__ float staged[64];
  staged[threadIdx.x] = static_cast<float>(threadIdx.x + 1);
  out[threadIdx.x] = staged[63 - threadIdx.x];
}

// Block b writes data[b], then reads the other block's data[1 - b]: nothing orders two blocks of
// one launch, so one of them reads before the other wrote (launch with 2 blocks of 1 thread).
__global__ void cross_block_kernel(float* out, float* data) {
  const unsigned b = blockIdx.x;
  data[b] = static_cast<float>(b + 1);
  out[b] = data[1 - b];
}

// Only the first half of the block writes staged[]; every thread reads its own slot after the
// barrier, so the second half reads shared memory nobody wrote.
__global__ void unwritten_shared_kernel(float* out) {
  __shared__ float staged[32];
  if (threadIdx.x < 16) staged[threadIdx.x] = 1.0f;
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = staged[threadIdx.x];
}

float* device_floats(int n) {
  void* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, sizeof(float) * static_cast<std::size_t>(n)), cudaSuccess);
  return static_cast<float*>(p);
}

TEST(CudaEmulator, ANonBlockingStreamsKernelRunsOnlyWhenTheHostSynchronizesWithIt) {
  constexpr int n = 64;
  float* d = device_floats(n);
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  fill_kernel<<<1, n, 0, stream>>>(d, 3.0f, n);
  std::vector<float> host(n);
  // cudaMemcpy runs on the legacy stream, which does not wait for a non-blocking one.
  ASSERT_EQ(cudaMemcpy(host.data(), d, sizeof(float) * n, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_TRUE(std::isnan(host[0])) << "fresh device memory reads NaN until the kernel runs";
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(host.data(), d, sizeof(float) * n, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(host[0], 3.0f);
  EXPECT_EQ(host[n - 1], 3.0f);
  cudaStreamDestroy(stream);
  cudaFree(d);
}

TEST(CudaEmulator, AStreamSeesAnotherStreamsResultOnlyAfterWaitingOnItsEvent) {
  constexpr int n = 32;
  float* a = device_floats(n);
  float* b = device_floats(n);
  float* c = device_floats(n);
  cudaStream_t producer = nullptr, consumer = nullptr;
  cudaEvent_t done = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&producer, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&consumer, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), cudaSuccess);
  fill_kernel<<<1, n, 0, producer>>>(a, 7.0f, n);
  copy_kernel<<<1, n, 0, consumer>>>(b, a, n);  // no wait: reads a before the fill ran
  ASSERT_EQ(cudaEventRecord(done, producer), cudaSuccess);
  ASSERT_EQ(cudaStreamWaitEvent(consumer, done, 0), cudaSuccess);
  copy_kernel<<<1, n, 0, consumer>>>(c, a, n);  // after the wait: reads the fill
  ASSERT_EQ(cudaStreamSynchronize(consumer), cudaSuccess);
  std::vector<float> host_b(n), host_c(n);
  ASSERT_EQ(cudaMemcpy(host_b.data(), b, sizeof(float) * n, cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(host_c.data(), c, sizeof(float) * n, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_TRUE(std::isnan(host_b[0])) << "the copy without a wait read stale memory";
  EXPECT_EQ(host_c[0], 7.0f);
  cudaEventDestroy(done);
  cudaStreamDestroy(producer);
  cudaStreamDestroy(consumer);
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
}

// A capture records the stream's work without running it; each launch of the graph runs it again
// with the arguments it was captured with, reading the device memory as it is then.
TEST(CudaEmulator, ACapturedGraphRunsItsWorkAtEachLaunchNotAtCapture) {
  constexpr int n = 16;
  float* in = device_floats(n);
  float* out = device_floats(n);
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  ASSERT_EQ(cudaStreamIsCapturing(stream, &status), cudaSuccess);
  EXPECT_EQ(status, cudaStreamCaptureStatusActive);
  copy_kernel<<<1, n, 0, stream>>>(out, in, n);
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  std::vector<float> host(n);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(host.data(), out, sizeof(float) * n, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_TRUE(std::isnan(host[0])) << "the captured copy ran at capture";
  for (const float value : {2.0f, 5.0f}) {
    fill_kernel<<<1, n, 0, stream>>>(in, value, n);
    ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(host.data(), out, sizeof(float) * n, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(host[0], value);
    EXPECT_EQ(host[n - 1], value);
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
  cudaFree(in);
  cudaFree(out);
}

TEST(CudaEmulator, ThreadOrderBetweenBarriersShowsAMissingSyncthreads) {
  float* d = device_floats(64);
  missing_barrier_kernel<<<1, 64>>>(d);
  std::vector<float> host(64);
  ASSERT_EQ(cudaMemcpy(host.data(), d, sizeof(float) * 64, cudaMemcpyDeviceToHost), cudaSuccess);
  // In thread order thread 0 reads staged[63] before thread 63 writes it; with the barrier it
  // would read 64. (Under AUTOTRAIN_CUDA_EMU_ORDER=reverse thread 63 reads staged[0] too early,
  // where the barrier would give 1.)
  const char* order = std::getenv("AUTOTRAIN_CUDA_EMU_ORDER");
  const bool reverse = order != nullptr && std::string(order) == "reverse";
  EXPECT_NE(host[reverse ? 63 : 0], reverse ? 1.0f : 64.0f);
  cudaFree(d);
}

// The emulated mma.sync follows the PTX ISA's fragment layout: small integers, so every product
// and sum is exact in fp16 and fp32.
TEST(CudaEmulator, MmaComputesTheProductOfItsDocumentedFragments) {
  std::vector<__half> a(16 * 16), b(16 * 8);
  for (int i = 0; i < 16 * 16; ++i) a[i] = __float2half(static_cast<float>(i % 7 - 3));
  for (int i = 0; i < 16 * 8; ++i) b[i] = __float2half(static_cast<float>(i % 5 - 2));
  void* d_a = nullptr;
  void* d_b = nullptr;
  ASSERT_EQ(cudaMalloc(&d_a, a.size() * 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&d_b, b.size() * 2), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(d_a, a.data(), a.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(d_b, b.data(), b.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
  float* d_d = device_floats(16 * 8);
  mma_kernel<<<1, 32>>>(d_d, static_cast<const __half*>(d_a), static_cast<const __half*>(d_b));
  std::vector<float> d(16 * 8);
  ASSERT_EQ(cudaMemcpy(d.data(), d_d, sizeof(float) * d.size(), cudaMemcpyDeviceToHost),
            cudaSuccess);
  for (int row = 0; row < 16; ++row) {
    for (int col = 0; col < 8; ++col) {
      float expected = 1.0f;
      for (int k = 0; k < 16; ++k)
        expected += __half2float(a[row * 16 + k]) * __half2float(b[k * 8 + col]);
      EXPECT_EQ(d[row * 8 + col], expected) << "D[" << row << "][" << col << "]";
    }
  }
  cudaFree(d_a);
  cudaFree(d_b);
  cudaFree(d_d);
}

TEST(CudaEmulator, BlockOrderShowsABlockReadingAnotherBlocksOutputOfTheSameLaunch) {
  float* out = device_floats(2);
  float* data = device_floats(2);  // cudaMalloc'd memory starts as NaN here
  cross_block_kernel<<<2, 1>>>(out, data);
  std::vector<float> host(2);
  ASSERT_EQ(cudaMemcpy(host.data(), out, sizeof(float) * 2, cudaMemcpyDeviceToHost), cudaSuccess);
  // Blocks in order: block 0 reads data[1] before block 1 writes it (had both written first, it
  // would read 2). In reverse order block 1 reads data[0] too early (else 1).
  const char* order = std::getenv("AUTOTRAIN_CUDA_EMU_ORDER");
  const bool reverse = order != nullptr && std::string(order) == "reverse";
  EXPECT_TRUE(std::isnan(host[reverse ? 1 : 0])) << host[reverse ? 1 : 0];
  EXPECT_EQ(host[reverse ? 0 : 1], reverse ? 2.0f : 1.0f);
  cudaFree(out);
  cudaFree(data);
}

TEST(CudaEmulator, StaticSharedMemoryNobodyWroteReadsAsNanInEveryBlock) {
  // Two launches of two blocks: neither a first block nor a later one finds zeros or what the
  // previous block left, as a GPU's shared memory holds garbage.
  float* d = device_floats(64);
  std::vector<float> host(64);
  for (int launch = 0; launch < 2; ++launch) {
    unwritten_shared_kernel<<<2, 32>>>(d);
    ASSERT_EQ(cudaMemcpy(host.data(), d, sizeof(float) * 64, cudaMemcpyDeviceToHost), cudaSuccess);
    for (int block = 0; block < 2; ++block) {
      for (int t = 0; t < 32; ++t) {
        const float value = host[static_cast<std::size_t>(block * 32 + t)];
        if (t < 16) {
          EXPECT_EQ(value, 1.0f) << "block " << block << ", thread " << t;
        } else {
          EXPECT_TRUE(std::isnan(value)) << "block " << block << ", thread " << t << ": " << value;
        }
      }
    }
  }
  cudaFree(d);
}

using CudaEmulatorDeathTest = ::testing::Test;

TEST_F(CudaEmulatorDeathTest, AHostPointerGivenToAKernelStopsTheRun) {
  std::vector<float> host(8);
  EXPECT_DEATH(
      {
        fill_kernel<<<1, 8>>>(host.data(), 1.0f, 8);
        cudaDeviceSynchronize();
      },
      "argument 0 is a pointer outside every device allocation");
}

TEST_F(CudaEmulatorDeathTest, WaitingForAStreamBeingCapturedStopsTheRun) {
  EXPECT_DEATH(
      {
        cudaStream_t stream = nullptr;
        cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
        cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
        cudaStreamSynchronize(stream);
      },
      "the host waits for a stream that is being captured");
}

TEST_F(CudaEmulatorDeathTest, AShuffleNamingALaneThatExitedStopsTheRun) {
  float* d = device_floats(32);
  EXPECT_DEATH(
      {
        shuffle_after_exit_kernel<<<1, 32>>>(d, 20);
        cudaDeviceSynchronize();
      },
      "exited before a warp-synchronous call");
  cudaFree(d);
}

TEST_F(CudaEmulatorDeathTest, ThreadsWaitingAtDifferentBarriersStopTheRun) {
  float* d = device_floats(32);
  EXPECT_DEATH(
      {
        divergent_barrier_kernel<<<1, 32>>>(d);
        cudaDeviceSynchronize();
      },
      "wait at different barriers");
  cudaFree(d);
}

TEST_F(CudaEmulatorDeathTest, MmaInAWarpOfFewerThan32ThreadsStopsTheRun) {
  EXPECT_DEATH(
      {
        half_warp_mma_kernel<<<1, 16>>>();
        cudaDeviceSynchronize();
      },
      "mma.sync. in a warp with fewer than 32 threads");
}

TEST_F(CudaEmulatorDeathTest, MoreThan48KbOfDynamicSharedMemoryStopsTheLaunch) {
  float* d = device_floats(32);
  EXPECT_DEATH(
      {
        fill_kernel<<<1, 32, 48 * 1024 + 16>>>(d, 1.0f, 32);
        cudaDeviceSynchronize();
      },
      "exceed the 48 KB a launch may use");
  cudaFree(d);
}

TEST_F(CudaEmulatorDeathTest, AMisaligned16ByteAccessStopsTheRunAndAnAlignedOneDoesNot) {
  float* in = device_floats(16);
  float* out = device_floats(1);
  const std::vector<float> values{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  ASSERT_EQ(cudaMemcpy(in, values.data(), sizeof(float) * 16, cudaMemcpyHostToDevice), cudaSuccess);
  aligned_vector_load_kernel<<<1, 1>>>(out, in);
  float sum = 0;
  ASSERT_EQ(cudaMemcpy(&sum, out, sizeof sum, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(sum, 5.0f + 6.0f + 7.0f + 8.0f);
  EXPECT_DEATH(
      {
        misaligned_vector_load_kernel<<<1, 1>>>(out, in);
        cudaDeviceSynchronize();
      },
      "16-byte access at .*: misaligned address");
  cudaFree(in);
  cudaFree(out);
}

TEST_F(CudaEmulatorDeathTest, ACopyInTheWrongDirectionStopsTheRun) {
  float* d = device_floats(4);
  std::vector<float> host(4);
  EXPECT_DEATH(cudaMemcpy(d, host.data(), 16, cudaMemcpyDeviceToHost),
               "cudaMemcpyDeviceToHost of 16 bytes");
  cudaFree(d);
}

}  // namespace
