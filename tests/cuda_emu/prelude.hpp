#pragma once
// Force-included (-include) before every .cu file that the emulator build compiles with g++ after
// translate.py. Gives the device-side language the kernels use: thread and block indices,
// __shared__, __syncthreads, warp shuffles, mma.sync and the device math functions that the host
// C library lacks, and Launch, the target of translated <<<...>>> launches.
#define __shared__ static
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
// Register-allocation hints mean nothing on the CPU (the toolkit's headers define it only for
// nvcc). #pragma unroll is ignored too (the build passes -Wno-unknown-pragmas).
#ifndef __launch_bounds__
#define __launch_bounds__(...)
#endif

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

// The running CUDA thread's coordinates, set by the emulator before it resumes a thread.
extern uint3 threadIdx;
extern uint3 blockIdx;
extern dim3 blockDim;
extern dim3 gridDim;
inline constexpr int warpSize = 32;

namespace cuda_emu {

// Queues a grid of thread_body on stream; each CUDA thread runs thread_body once.
void launch_grid(const char* name, dim3 grid, dim3 block, std::size_t shared_bytes,
                 cudaStream_t stream, std::function<void()> thread_body);
// Checks a pointer argument of a kernel: null or inside a device allocation.
void check_kernel_pointer(const char* kernel, int index, const void* pointer);
// The running block's dynamic shared memory (the launch's shared_bytes).
void* dynamic_shared_bytes();
template <typename T>
T* dynamic_shared() {
  return static_cast<T*>(dynamic_shared_bytes());
}

void sync_block();
void sync_warp(unsigned mask);
// Publishes this lane's value, waits for the warp, reads lane `source`'s value, waits again.
void exchange(unsigned mask, const void* value, std::size_t bytes, int source, void* out);
int lane_id();
// Every lane of a full warp publishes `bytes` at `value`; `all` receives the 32 copies in lane
// order. Warp-synchronous, like the mma.sync it serves.
void gather_warp(const void* value, std::size_t bytes, void* all);
// Stops the run: a vector access of `bytes` (16: a uint4/float4 load or store) through a pointer
// that is not `bytes`-aligned, which a GPU faults on with "misaligned address".
[[noreturn]] void fail_misaligned(const void* pointer, std::size_t bytes);
// What the kernels' 128-bit access helper (src/kernels/gpu/common.cuh) calls before each access;
// the GPU build has no such check, the hardware faults instead.
inline void check_vector_access(const void* pointer, std::size_t bytes) {
  if (reinterpret_cast<std::uintptr_t>(pointer) % bytes != 0) fail_misaligned(pointer, bytes);
}

class Launch {
 public:
  Launch(const char* name, dim3 grid, dim3 block, std::size_t shared_bytes = 0,
         cudaStream_t stream = nullptr)
      : name_(name), grid_(grid), block_(block), shared_(shared_bytes), stream_(stream) {}

  template <typename Kernel, typename... Args>
  void run(Kernel kernel, Args&&... args) {
    auto values = std::make_tuple(std::decay_t<Args>(std::forward<Args>(args))...);
    check_pointers(values, std::index_sequence_for<Args...>{});
    launch_grid(name_, grid_, block_, shared_, stream_,
                [kernel, values]() mutable { std::apply(kernel, values); });
  }

 private:
  template <typename Tuple, std::size_t... I>
  void check_pointers(const Tuple& values, std::index_sequence<I...>) const {
    (check_one(static_cast<int>(I), std::get<I>(values)), ...);
  }
  template <typename T>
  void check_one(int index, const T& value) const {
    if constexpr (std::is_pointer_v<T>) check_kernel_pointer(name_, index, value);
  }

  const char* name_;
  dim3 grid_;
  dim3 block_;
  std::size_t shared_;
  cudaStream_t stream_;
};

}  // namespace cuda_emu

inline void __syncthreads() {
  cuda_emu::sync_block();
}
inline void __syncwarp(unsigned mask = 0xffffffffu) {
  cuda_emu::sync_warp(mask);
}

template <typename T>
T __shfl_xor_sync(unsigned mask, T value, int lane_mask, int width = warpSize) {
  const int lane = cuda_emu::lane_id();
  int source = lane ^ lane_mask;
  if (source / width != lane / width) source = lane;  // outside this lane's segment
  T out;
  cuda_emu::exchange(mask, &value, sizeof(T), source, &out);
  return out;
}
template <typename T>
T __shfl_sync(unsigned mask, T value, int src_lane, int width = warpSize) {
  const int lane = cuda_emu::lane_id();
  T out;
  cuda_emu::exchange(mask, &value, sizeof(T), (lane / width) * width + src_lane % width, &out);
  return out;
}
template <typename T>
T __shfl_down_sync(unsigned mask, T value, unsigned delta, int width = warpSize) {
  const int lane = cuda_emu::lane_id();
  int source = lane + static_cast<int>(delta);
  if (source / width != lane / width) source = lane;
  T out;
  cuda_emu::exchange(mask, &value, sizeof(T), source, &out);
  return out;
}

namespace cuda_emu {

// Element i (0 low, 1 high half) of a register holding two 16-bit F values, in fp32.
template <typename F>
float emu_half_of(std::uint32_t bits, int i) {
  const auto raw = static_cast<std::uint16_t>(bits >> (16 * i));
  F value;
  std::memcpy(static_cast<void*>(&value), &raw, sizeof raw);
  if constexpr (std::is_same_v<F, __nv_bfloat16>)
    return __bfloat162float(value);
  else
    return __half2float(value);
}

// mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}: d += a·b for the warp, with the fragment
// layout of the PTX ISA (src/kernels/gpu/mma.cuh spells it out). Each lane gathers the warp's
// registers, rebuilds A and B, and computes the four elements of D it holds.
template <typename F>
void mma_m16n8k16(float (&d)[4], const std::uint32_t (&a)[4], const std::uint32_t (&b)[2]) {
  struct Registers {
    std::uint32_t a[4];
    std::uint32_t b[2];
  };
  const Registers mine{{a[0], a[1], a[2], a[3]}, {b[0], b[1]}};
  Registers warp[32];
  gather_warp(&mine, sizeof mine, warp);
  float A[16][16];
  float B[16][8];
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4;
    const int t = lane % 4;
    for (int i = 0; i < 2; ++i) {
      A[g][2 * t + i] = emu_half_of<F>(warp[lane].a[0], i);
      A[g + 8][2 * t + i] = emu_half_of<F>(warp[lane].a[1], i);
      A[g][2 * t + 8 + i] = emu_half_of<F>(warp[lane].a[2], i);
      A[g + 8][2 * t + 8 + i] = emu_half_of<F>(warp[lane].a[3], i);
      B[2 * t + i][g] = emu_half_of<F>(warp[lane].b[0], i);
      B[2 * t + 8 + i][g] = emu_half_of<F>(warp[lane].b[1], i);
    }
  }
  const int g = lane_id() / 4;
  const int t = lane_id() % 4;
  for (int e = 0; e < 4; ++e) {
    const int row = g + (e >= 2 ? 8 : 0);
    const int col = 2 * t + e % 2;
    float sum = d[e];
    for (int k = 0; k < 16; ++k) sum += A[row][k] * B[k][col];
    d[e] = sum;
  }
}

}  // namespace cuda_emu

inline float rsqrtf(float x) {
  return 1.0f / std::sqrt(x);
}
inline float __expf(float x) {
  return std::exp(x);
}
inline float __fdividef(float x, float y) {
  return x / y;
}
// The correctly rounded intrinsics: one rounding each, never contracted into a fused multiply-add
// with a neighbour (the volatile store forces the rounding wherever the compiler would fuse).
inline float __fmul_rn(float x, float y) {
  volatile float product = x * y;
  return product;
}
inline float __fadd_rn(float x, float y) {
  volatile float sum = x + y;
  return sum;
}
inline float __fdiv_rn(float x, float y) {
  volatile float quotient = x / y;
  return quotient;
}
